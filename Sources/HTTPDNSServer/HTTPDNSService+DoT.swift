import DNSWire
import Foundation
import HTTPServing

// DNS over TLS (RFC 7858) is the DoH wire endpoint behind another framing: the HTTP server's
// message-stream listener (HTTPServer.MessageStream) hands each length-prefixed query to the
// responder as a POST of /dns-query, so that zone, views, checks, decisions, kept answers, metrics
// and the access log are the same code as for DoH. What differs is here: the listener's settings
// and the padding RFC 8467 asks of an encrypted stream's responder.
extension HTTPDNSService {
    /// The message stream of a DNS-over-TLS listener: each query a POST of `/dns-query` in
    /// `application/dns-message`, as RFC 8484 posts it.
    static let dotMessageStream = HTTPServer.MessageStream(
        path: "/dns-query", headers: [HTTPServer.Header(name: "Content-Type", value: HTTPDNSService.dnsMessageType)])

    /// The block length responses are padded to (RFC 8467 §4.1, the recommended policy).
    static let responsePaddingBlock = 468

    /// The EDNS Padding option's code (RFC 7830 §3).
    static let paddingOptionCode: UInt16 = 12

    /// `response` padded with an EDNS Padding option (RFC 7830) to a multiple of
    /// ``responsePaddingBlock`` bytes when `query` carried a Padding option and the response has
    /// an OPT record, as RFC 8467 §4.1 asks of responders ("if and only if the query was padded");
    /// else unchanged. A response that would pass 65,535 bytes padded stays unpadded.
    static func padded(_ response: HTTPServer.Response, query: [UInt8]) -> HTTPServer.Response {
        // Most queries are self-contained and read without decoding; the others are decoded.
        let queryOptions = HTTPDNSWireAnswerCache.isSelfContained(query)
            ? HTTPDNSWireAnswerCache.ednsOptions(in: query) : (try? DNSMessage(decoding: query))?.edns?.options
        guard response.status == 200, case .data(let body) = response.body,
            let queryOptions, hasOption(paddingOptionCode, in: queryOptions),
            var message = try? DNSMessage(decoding: [UInt8](body)),
            let index = message.additionals.firstIndex(where: { if case .opt = $0.data { true } else { false } }),
            case .opt(var edns) = message.additionals[index].data
        else { return response }
        // Measured with an empty Padding option, then made again with the zeros (§4) the block
        // needs: option data is never compressed, so the message grows by exactly that many bytes.
        let options = edns.options
        edns.options = options + [0, UInt8(paddingOptionCode), 0, 0]
        message.additionals[index] = .opt(edns)
        guard let unpadded = try? message.encode() else { return response }
        let fill = (responsePaddingBlock - unpadded.count % responsePaddingBlock) % responsePaddingBlock
        guard unpadded.count + fill <= maxMessageBytes else { return response }
        edns.options = options + [0, UInt8(paddingOptionCode), UInt8(fill >> 8), UInt8(fill & 0xFF)]
            + [UInt8](repeating: 0, count: fill)
        message.additionals[index] = .opt(edns)
        guard let bytes = try? message.encode() else { return response }
        var padded = response
        padded.body = .data(Data(bytes))
        return padded
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
