import DNSWire
import Foundation
import HTTPDNSCore

extension HTTPDNSService {
    /// The media type of RFC 8484 messages.
    public static let dnsMessageType = "application/dns-message"
    /// The media type of JSON DoH answers.
    public static let dnsJSONType = "application/dns-json"

    /// DNS over HTTPS at `/dns-query` (RFC 8484 §4 and §6 hardening): GET `?dns=` (base64url; padding
    /// tolerated), POST with `content-type: application/dns-message`, or GET `?name=&type=` for
    /// JSON. Other methods get 405, a wrong POST type 415, bodies over 65,535 bytes 413, bad base64
    /// or a message that is not one query 400.
    func handleDoH(_ request: HTTPServer.Request) -> HTTPServer.Response {
        switch request.method {
        case "GET":
            if let encoded = Self.rawQueryValue(request, "dns") {
                guard !Self.isRepeated(request, "dns") else { return Self.badRequest("dns given twice") }
                // 65,535 bytes take at most 87,380 base64 characters.
                guard encoded.utf8.count <= 87_384 else { return Self.text("DNS message too large\n", status: 413) }
                guard let bytes = Self.decodeBase64URL(encoded) else { return Self.badRequest("dns is not base64url") }
                guard bytes.count <= Self.maxMessageBytes else { return Self.text("DNS message too large\n", status: 413) }
                return answerWire(bytes, clientSubnet: clientSubnet(of: request))
            }
            if request.queryValue("name") != nil { return handleDoHJSON(request) }
            return Self.badRequest("missing dns or name parameter")
        case "POST":
            let type = (request.header("Content-Type") ?? "").split(separator: ";").first
                .map { $0.trimmingCharacters(in: .whitespaces).lowercased() } ?? ""
            guard type == Self.dnsMessageType else {
                return Self.text("content type must be \(Self.dnsMessageType)\n", status: 415)
            }
            guard request.body.count <= Self.maxMessageBytes else { return Self.text("DNS message too large\n", status: 413) }
            return answerWire([UInt8](request.body), clientSubnet: clientSubnet(of: request))
        default:
            return Self.methodNotAllowed("GET, POST")
        }
    }

    /// Decodes and answers one wire-format query.
    ///
    /// - Parameter clientSubnet: sent upstream as EDNS Client Subnet, unless the query itself
    ///   carries a Client Subnet option with source prefix 0 (the client opting out, RFC 7871 §7.1.2).
    func answerWire(_ bytes: [UInt8], clientSubnet: HTTPDNSClientSubnet? = nil) -> HTTPServer.Response {
        let query: DNSMessage
        do {
            query = try DNSMessage(decoding: bytes)
        } catch {
            return Self.badRequest("malformed DNS message")
        }
        guard !query.isResponse else { return Self.badRequest("not a DNS query") }
        guard query.questions.count == 1, let question = query.questions.first else {
            return Self.badRequest("a query needs exactly one question")
        }
        var response = DNSMessage.response(to: query)
        var maxAge: UInt32 = 0
        let edns = query.edns
        if let edns, edns.version != 0 {
            // RFC 6891 §6.1.3: BADVERS (16) is extended RCODE 1 with header RCODE 0.
            response.additionals.append(.opt(DNSEDNS(extendedRCode: 1)))
        } else if query.opcode != 0 {
            response.rcode = .notImplemented
        } else {
            let optedOut = edns.map { Self.optsOutOfClientSubnet($0.options) } ?? false
            let reply = reply(to: question, clientSubnet: optedOut ? nil : clientSubnet)
            response.rcode = reply.rcode
            response.isAuthoritative = reply.authoritative && reply.rcode != .serverFailure
            response.answers = reply.answers
            response.authorities = reply.authorities
            maxAge = reply.rcode == .serverFailure ? 0 : reply.maxAge
            if edns != nil { response.additionals.append(.opt(DNSEDNS())) }
        }
        guard let encoded = try? response.encode() else {
            var failure = DNSMessage.response(to: query, rcode: .serverFailure)
            failure.questions = []
            return Self.dnsMessage((try? failure.encode()) ?? [], maxAge: 0)
        }
        return Self.dnsMessage(encoded, maxAge: maxAge)
    }

    static func dnsMessage(_ bytes: [UInt8], maxAge: UInt32) -> HTTPServer.Response {
        HTTPServer.Response(
            status: 200,
            headers: [
                HTTPServer.Header(name: "Content-Type", value: dnsMessageType),
                HTTPServer.Header(name: "Cache-Control", value: "max-age=\(maxAge)"),
            ],
            body: Data(bytes))
    }

    /// base64url (RFC 4648 §5) without padding, as RFC 8484 sends it; padding and the standard
    /// alphabet's `+` and `/` are tolerated. Nil for anything else.
    static func decodeBase64URL(_ text: String) -> [UInt8]? {
        var body = Substring(text)
        while body.hasSuffix("=") { body = body.dropLast() }
        guard !body.isEmpty, body.utf8.count % 4 != 1 else { return nil }
        var standard = ""
        standard.reserveCapacity(body.utf8.count + 3)
        for scalar in body.unicodeScalars {
            switch scalar {
            case "A"..."Z", "a"..."z", "0"..."9", "+", "/": standard.unicodeScalars.append(scalar)
            case "-": standard += "+"
            case "_": standard += "/"
            default: return nil
            }
        }
        standard += String(repeating: "=", count: (4 - standard.utf8.count % 4) % 4)
        return Data(base64Encoded: standard).map { [UInt8]($0) }
    }
}
