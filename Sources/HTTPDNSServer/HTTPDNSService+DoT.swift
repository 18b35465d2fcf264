import DNSWire
import Foundation
import HTTPServing

// DNS over TLS (RFC 7858) is the DoH wire endpoint behind another framing: the HTTP server's
// message-stream listener (HTTPServer.MessageStream) hands each length-prefixed query to the
// responder as a POST of /dns-query, so that zone, views, checks, decisions, kept answers, metrics
// and the access log are the same code as for DoH. What differs is here: the listener's settings,
// the padding RFC 8467 asks of an encrypted stream's responder, and RFC 7828's keepalive.
extension HTTPDNSService {
    /// The message stream of a DNS-over-TLS listener: each query a POST of `/dns-query` in
    /// `application/dns-message`, as RFC 8484 posts it.
    static let dotMessageStream = HTTPServer.MessageStream(
        path: "/dns-query", headers: [HTTPServer.Header(name: "Content-Type", value: HTTPDNSService.dnsMessageType)])

    /// The block length responses are padded to (RFC 8467 §4.1, the recommended policy).
    static let responsePaddingBlock = 468

    /// The EDNS Padding option's code (RFC 7830 §3).
    static let paddingOptionCode: UInt16 = 12

    /// The edns-tcp-keepalive option's code (RFC 7828 §3.1).
    static let keepaliveOptionCode: UInt16 = 11

    /// A DNS-over-TLS answer: `response` with the EDNS options a stream's query asks for, when the
    /// response has an OPT record to carry them; else unchanged.
    ///
    /// - edns-tcp-keepalive (RFC 7828 §3.3.2, RFC 7858 §3.4), when the query carried it: how long
    ///   the server keeps an idle connection, `idleTimeout` in units of 100 ms; 0 while `draining`,
    ///   which asks the client to close the connection and use another for its next queries.
    /// - Padding (RFC 7830), when the query was padded: the response padded to a multiple of
    ///   ``responsePaddingBlock`` bytes (RFC 8467 §4.1: "if and only if the query was padded"). A
    ///   response that would pass 65,535 bytes padded stays unpadded.
    static func dotAnswer(
        _ response: HTTPServer.Response, query: [UInt8], idleTimeout: Duration, draining: Bool
    ) -> HTTPServer.Response {
        guard let queryOptions = queryOptions(query) else { return response }
        let keepalive = hasOption(keepaliveOptionCode, in: queryOptions)
        let padding = hasOption(paddingOptionCode, in: queryOptions)
        guard keepalive || padding, response.status == 200, case .data(let body) = response.body,
            var message = try? DNSMessage(decoding: [UInt8](body)),
            let index = message.additionals.firstIndex(where: { if case .opt = $0.data { true } else { false } }),
            case .opt(var edns) = message.additionals[index].data
        else { return response }
        var options = edns.options
        if keepalive {
            let (seconds, attoseconds) = idleTimeout.components
            let tenths = draining ? 0 : min(0xFFFF, max(1, seconds * 10 + attoseconds / 100_000_000_000_000_000))
            options += [0, UInt8(keepaliveOptionCode), 0, 2, UInt8(tenths >> 8), UInt8(tenths & 0xFF)]
        }
        if padding {
            // Measured with an empty Padding option, then made with the zeros (§4) the block needs:
            // option data is never compressed, so the message grows by exactly that many bytes.
            edns.options = options + [0, UInt8(paddingOptionCode), 0, 0]
            message.additionals[index] = .opt(edns)
            guard let unpadded = try? message.encode() else { return response }
            let fill = (responsePaddingBlock - unpadded.count % responsePaddingBlock) % responsePaddingBlock
            if unpadded.count + fill <= maxMessageBytes {
                options += [0, UInt8(paddingOptionCode), UInt8(fill >> 8), UInt8(fill & 0xFF)] + [UInt8](repeating: 0, count: fill)
            }
        }
        edns.options = options
        message.additionals[index] = .opt(edns)
        guard let bytes = try? message.encode() else { return response }
        var answered = response
        answered.body = .data(Data(bytes))
        return answered
    }

    /// The EDNS options of `query` (code, length, data triples), nil when it has no OPT record or
    /// cannot be read. Most queries are self-contained and read without decoding; the others are decoded.
    static func queryOptions(_ query: [UInt8]) -> [UInt8]? {
        HTTPDNSWireAnswerCache.isSelfContained(query)
            ? HTTPDNSWireAnswerCache.ednsOptions(in: query) : (try? DNSMessage(decoding: query))?.edns?.options
    }

    /// Whether EDNS `options` (code, length, data triples) hold option `code`.
    static func hasOption(_ code: UInt16, in options: [UInt8]) -> Bool {
        var offset = 0
        while offset + 4 <= options.count {
            let found = UInt16(options[offset]) << 8 | UInt16(options[offset + 1])
            if found == code { return true }
            offset += 4 + (Int(options[offset + 2]) << 8 | Int(options[offset + 3]))
        }
        return false
    }
}
