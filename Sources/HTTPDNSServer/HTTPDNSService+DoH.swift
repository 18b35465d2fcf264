import DNSWire
import Foundation
@_spi(HTTPDNSPackage) import HTTPDNSCore
import HTTPServing

extension HTTPDNSService {
    /// The media type of RFC 8484 messages.
    public static let dnsMessageType = "application/dns-message"
    /// The media type of JSON DoH answers.
    public static let dnsJSONType = "application/dns-json"

    /// DNS over HTTPS at `/dns-query` (RFC 8484 §4 and §6 hardening): GET `?dns=` (base64url; padding
    /// tolerated), POST with `content-type: application/dns-message`, or GET `?name=&type=` for
    /// JSON. Other methods get 405, a wrong POST type 415, bodies over 65,535 bytes 413, bad base64
    /// or a message that is not one query 400.
    func handleDoH(_ request: HTTPServer.Request, _ lookups: HTTPDNSServiceLookups) -> HTTPServer.Response {
        switch request.method {
        case "GET":
            if let encoded = Self.rawQueryValue(request, "dns") {
                guard !Self.isRepeated(request, "dns") else { return Self.badRequest("dns given twice") }
                // 65,535 bytes take at most 87,380 base64 characters.
                guard encoded.count <= 87_384 else { return Self.text("DNS message too large\n", status: 413) }
                guard let bytes = Self.decodeBase64URL(encoded) else { return Self.badRequest("dns is not base64url") }
                guard bytes.count <= Self.maxMessageBytes else { return Self.text("DNS message too large\n", status: 413) }
                return answerWire(bytes, clientSubnet: clientSubnet(of: request), client: clientAddress(of: request), lookups)
            }
            if request.queryValue("name") != nil { return handleDoHJSON(request, lookups) }
            return Self.badRequest("missing dns or name parameter")
        case "POST":
            guard Self.mediaType(request.header("Content-Type") ?? "") == Self.dnsMessageType else {
                return Self.text("content type must be \(Self.dnsMessageType)\n", status: 415)
            }
            guard request.body.count <= Self.maxMessageBytes else { return Self.text("DNS message too large\n", status: 413) }
            let query = [UInt8](request.body)
            // DNS over QUIC: edns-tcp-keepalive is TCP's, and a query carrying it a protocol error
            // (RFC 9250 §5.5.2; a 400 closes the connection with DOQ_PROTOCOL_ERROR).
            if request.isQUIC, Self.queryOptions(query).map({ Self.hasOption(Self.keepaliveOptionCode, in: $0) }) == true {
                return Self.badRequest("edns-tcp-keepalive over QUIC")
            }
            let response = answerWire(query, clientSubnet: clientSubnet(of: request), client: clientAddress(of: request), lookups)
            // DNS over TLS and QUIC: the padding (and over TLS the keepalive) its query asks for.
            guard request.isMessage else { return response }
            return Self.dotAnswer(response, query: query, idleTimeout: configuration.connections.dotIdleTimeout, draining: isDraining)
        default:
            return Self.methodNotAllowed("GET, POST")
        }
    }

    /// Decodes and answers one wire-format query.
    ///
    /// The view is the one of the query's EDNS Client Subnet (RFC 7871) when it carries one (the
    /// default view for a source prefix of 0, which asks that no address be used), else of `client`
    /// (``viewClient(of:subnet:ipParameter:)``). A query with a Client Subnet
    /// option is answered with one (§7.2.2) echoing its family, source prefix and address, its
    /// SCOPE PREFIX-LENGTH the view's scope when the answer depends on the view (§7.2.1), else 0;
    /// a malformed option is answered FORMERR (§6).
    ///
    /// - Parameters:
    ///   - clientSubnet: sent upstream as EDNS Client Subnet, unless the query itself carries a
    ///     Client Subnet option with source prefix 0 (the client opting out, RFC 7871 §7.1.2).
    ///   - client: the request's client (``clientAddress(of:)``). Default nil (the default view).
    func answerWire(
        _ bytes: [UInt8], clientSubnet: HTTPDNSClientSubnet? = nil, client: HTTPDNSIPAddress? = nil, _ lookups: HTTPDNSServiceLookups
    ) -> HTTPServer.Response {
        // Kept answers are per view: the view is read from the query's bytes without decoding them.
        // A Client Subnet option decides alone: with a source prefix of 0 the client asks that no
        // address be used (RFC 7871 §7.1.2), so the default view answers, with the SCOPE 0 that is
        // then true for every client; the peer's view would claim that scope for other views' clients.
        if !lookups.views.isEmpty, let subnet = HTTPDNSWireAnswerCache.clientSubnet(in: bytes) {
            selectView(subnet.client, lookups)
        } else {
            selectView(lookups.views.isEmpty ? nil : client, lookups)
        }
        let keptView = lookups.view.index
        if let (response, description) = lookups.wireAnswers?.answer(to: bytes, view: keptView) {
            lookups.description = description
            return response
        }
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
        // Kept for the next same query when the zone alone answered (nothing in it ages).
        var fromZoneAlone = false
        let edns = query.edns
        if let edns, edns.version != 0 {
            // RFC 6891 §6.1.3: BADVERS (16) is extended RCODE 1 with header RCODE 0.
            response.additionals.append(.opt(DNSEDNS(extendedRCode: 1)))
        } else if query.opcode != 0 {
            response.rcode = .notImplemented
        } else if case .malformed = edns.map({ HTTPDNSQuerySubnet.read($0.options) }) ?? .absent {
            response.rcode = .formatError
            response.additionals.append(.opt(DNSEDNS()))
        } else {
            let optedOut = edns.map { Self.optsOutOfClientSubnet($0.options) } ?? false
            var subnet: HTTPDNSQuerySubnet?
            if let edns, case .subnet(let read) = HTTPDNSQuerySubnet.read(edns.options) { subnet = read }
            selectView(subnet?.client ?? client, lookups)
            let reply = reply(to: question, clientSubnet: optedOut ? nil : clientSubnet, lookups)
            lookups.described(question, reply)
            response.rcode = reply.rcode
            response.isAuthoritative = reply.authoritative && reply.rcode != .serverFailure
            response.answers = reply.answers
            response.authorities = reply.authorities
            maxAge = reply.rcode == .serverFailure ? 0 : reply.maxAge
            if edns != nil {
                var opt = DNSEDNS()
                if let subnet { opt.options = subnet.answerOption(scope: answerScope(subnet, reply, lookups)) }
                response.additionals.append(.opt(opt))
            }
            // A fail-open answer is made afresh each time, so that each one is counted; one that reports
            // reordered is too, as their decisions end by time.
            fromZoneAlone = reply.authoritative && lookups.missing.isEmpty && lookups.upstreamOutcomes == [] && !lookups.failedOpen
                && !lookups.reordered && (reply.rcode == .noError || reply.rcode == .nameError) && lookups.view.index == keptView
        }
        guard let encoded = try? response.encode() else {
            var failure = DNSMessage.response(to: query, rcode: .serverFailure)
            failure.questions = []
            return Self.dnsMessage((try? failure.encode()) ?? [], maxAge: 0)
        }
        if fromZoneAlone {
            lookups.wireAnswers?.store(encoded, maxAge: maxAge, description: lookups.description, for: bytes, view: keptView)
        }
        return Self.dnsMessage(encoded, maxAge: maxAge)
    }

    /// The SCOPE PREFIX-LENGTH of the answer to a query with Client Subnet `subnet` (RFC 7871
    /// §7.2.1): the view's scope when the records answered depend on the view (so that a cache
    /// downstream keeps each view's answer to its own clients), 0 when they do not, for a negative
    /// answer (§7.4: caches treat those as /0 anyway) and for a source prefix of 0. An IPv4-mapped
    /// IPv6 subnet matched IPv4 networks; its scope counts the 96 bits before the IPv4 address.
    func answerScope(_ subnet: HTTPDNSQuerySubnet, _ reply: HTTPDNSServiceReply, _ lookups: HTTPDNSServiceLookups) -> Int {
        guard lookups.usedViews, subnet.sourcePrefixLength > 0, reply.rcode == .noError, !reply.answers.isEmpty else { return 0 }
        let scope = lookups.view.scope
        return subnet.family == 2 && lookups.view.family == .v4 ? 96 + scope : scope
    }

    static func dnsMessage(_ bytes: [UInt8], maxAge: UInt32) -> HTTPServer.Response {
        HTTPServer.Response(status: 200, headers: dnsMessageHeaders(maxAge: maxAge), body: Data(bytes))
    }

    /// The header fields of an RFC 8484 answer.
    static func dnsMessageHeaders(maxAge: UInt32) -> [HTTPServer.Header] {
        [
            HTTPServer.Header(name: "Content-Type", value: dnsMessageType),
            HTTPServer.Header(name: "Cache-Control", value: "max-age=\(maxAge)"),
        ]
    }

    /// The media type of a `Content-Type` value: before any `;`, without spaces and tabs, lower case.
    static func mediaType(_ value: String) -> String {
        var bytes: [UInt8] = []
        for byte in value.utf8 {
            if byte == UInt8(ascii: ";") { break }
            if byte == UInt8(ascii: " ") || byte == 0x09 { continue }
            bytes.append(HTTPDNSASCII.lowercased(byte))
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// base64url (RFC 4648 §5) without padding, as RFC 8484 sends it; padding and the standard
    /// alphabet's `+` and `/` are tolerated. Nil for anything else.
    static func decodeBase64URL<Bytes: Collection<UInt8>>(_ text: Bytes) -> [UInt8]? {
        var end = text.count
        let bytes = Array(text)
        while end > 0, bytes[end - 1] == UInt8(ascii: "=") { end -= 1 }
        guard end > 0, end % 4 != 1 else { return nil }
        var output: [UInt8] = []
        output.reserveCapacity(end * 3 / 4)
        var accumulator: UInt32 = 0
        var bits = 0
        for index in 0..<end {
            let byte = bytes[index]
            let value: UInt32
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"): value = UInt32(byte - UInt8(ascii: "A"))
            case UInt8(ascii: "a")...UInt8(ascii: "z"): value = UInt32(byte - UInt8(ascii: "a")) + 26
            case UInt8(ascii: "0")...UInt8(ascii: "9"): value = UInt32(byte - UInt8(ascii: "0")) + 52
            case UInt8(ascii: "-"), UInt8(ascii: "+"): value = 62
            case UInt8(ascii: "_"), UInt8(ascii: "/"): value = 63
            default: return nil
            }
            accumulator = accumulator << 6 | value
            bits += 6
            if bits >= 8 {
                bits -= 8
                output.append(UInt8(truncatingIfNeeded: accumulator >> UInt32(bits)))
                accumulator &= (1 << UInt32(bits)) - 1
            }
        }
        return output
    }
}
