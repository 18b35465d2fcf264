import DNSWire
import Foundation
import HTTPDNSCore
import HTTPDNSServer
import HTTPServing

/// DNS over QUIC as the server reads a stream (RFC 9250 §4.2): the C server's own framing function
/// (through `HTTPServer.MessageStream.quicFrame`), fed the stream in reads as QUIC delivers it,
/// against a reference reading of the RFC, and the answers to what it frames.
extension HTTPDNSFuzzTarget {
    private static let doqService = HTTPDNSService(configuration: .init(zone: try! HTTPDNSZone(json: Data(#"""
        {"www.example.test": {"A": ["192.0.2.1", "192.0.2.2"], "AAAA": ["2001:db8::1"], "ttl": 120},
         "alias.example.test": {"CNAME": "www.example.test", "ttl": 90}}
        """#.utf8))))

    /// The RFC's rule, written independently: a two-byte length, a DNS message of that many bytes
    /// (at least its 12-byte header, ID 0), nothing after it, FIN not before its end.
    private static func referenceFrame(_ bytes: [UInt8], fin: Bool) -> HTTPServer.MessageStream.QUICFrame {
        if bytes.count < 2 { return fin ? .protocolError : .needMore }
        let length = Int(bytes[0]) << 8 | Int(bytes[1])
        if length < 12 { return .protocolError }
        if bytes.dropFirst(2).prefix(2).contains(where: { $0 != 0 }) { return .protocolError }
        if bytes.count > 2 + length { return .protocolError }
        if bytes.count < 2 + length { return fin ? .protocolError : .needMore }
        return .query(length)
    }

    static let serverDoQ = HTTPDNSFuzzTarget(
        "server-doq",
        "a DoQ stream frames as RFC 9250 reads it, whole and in reads, a query once and only at its end, and is answered under ID 0"
    ) { bytes throws(HTTPDNSFuzzFailure) in
        // The first byte: the size of the reads the stream arrives in (1-32 bytes) and whether FIN
        // comes with the last (its top bit); the rest: the stream.
        var input = FuzzInput(bytes)
        let first = input.choice(256)
        let step = first % 32 + 1
        let fin = first >= 128
        let stream = Array(input.rest)
        let whole = HTTPServer.MessageStream.quicFrame(stream, fin: fin)
        try require(whole == referenceFrame(stream, fin: fin), "\(whole) where RFC 9250 reads \(referenceFrame(stream, fin: fin))")
        // Read as a stream receives it: the verdict after each read, the last with FIN if given.
        var received: [UInt8] = []
        var offset = 0
        var verdicts: [HTTPServer.MessageStream.QUICFrame] = []
        while offset < stream.count {
            received += stream[offset..<min(stream.count, offset + step)]
            offset += step
            verdicts.append(HTTPServer.MessageStream.quicFrame(received, fin: fin && offset >= stream.count))
        }
        // The server stops at the first verdict that is not "more": it must be the whole stream's
        // unless the stream goes on past a query (then bytes past it are an error) or was already wrong.
        if let decided = verdicts.firstIndex(where: { $0 != .needMore }) {
            let isLast = decided == verdicts.count - 1
            switch verdicts[decided] {
            case .query(let length):
                try require(isLast || whole == .protocolError, "a query of \(length) bytes framed before the stream's end")
                try require(received.count >= 2 + length, "a query longer than the stream")
            case .protocolError:
                try require(whole == .protocolError, "an error in reads that the whole stream does not have")
            case .needMore:
                break
            }
        } else {
            try require(whole == .needMore || stream.isEmpty, "reads never decided what the whole stream decides: \(whole)")
        }
        guard case .query(let length) = whole else { return }
        let message = Array(stream[2..<(2 + length)])
        var request = HTTPServer.Request(
            method: "POST", path: "/dns-query", headers: [.init(name: "Content-Type", value: HTTPDNSService.dnsMessageType)],
            body: Data(message))
        request.isMessage = true
        request.isQUIC = true
        let response = doqService.handle(request)
        guard response.status == 200, case .data(let body) = response.body else { return }
        try require(body.count >= 12 && body.prefix(2) == Data([0, 0]), "an answer over QUIC whose ID is not 0")
        // RFC 9250 §5.5.2: a query carrying edns-tcp-keepalive is refused, never answered.
        if let query = try? DNSMessage(decoding: message), let options = query.edns?.options {
            var at = 0
            while at + 4 <= options.count {
                try require(!(options[at] == 0 && options[at + 1] == 11), "a query with edns-tcp-keepalive answered over QUIC")
                at += 4 + (Int(options[at + 2]) << 8 | Int(options[at + 3]))
            }
        }
    }
}
