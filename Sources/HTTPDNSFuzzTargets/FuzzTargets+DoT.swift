import DNSWire
import Foundation
import HTTPDNSCore
import HTTPDNSServer
import HTTPServing

/// DNS over TLS as the server reads it: the two-byte length framing of a message-stream connection
/// (the C loop's own function, through `HTTPServer.MessageStream.split`), and the answers to what
/// it frames.
extension HTTPDNSFuzzTarget {
    private static let dotService = HTTPDNSService(configuration: .init(zone: try! HTTPDNSZone(json: Data(#"""
        {"www.example.test": {"A": ["192.0.2.1", "192.0.2.2"], "AAAA": ["2001:db8::1"], "ttl": 120},
         "alias.example.test": {"CNAME": "www.example.test", "ttl": 90}}
        """#.utf8))))

    static let serverDoT = HTTPDNSFuzzTarget(
        "server-dot",
        "a DoT stream frames the same whole and read in pieces, loses no byte, and each query gets its own ID back, padded when asked"
    ) { bytes throws(HTTPDNSFuzzFailure) in
        // The first byte: the size of the reads the stream arrives in (1-32 bytes); the rest: the stream.
        var input = FuzzInput(bytes)
        let step = input.choice(32) + 1
        let stream = input.rest
        let (messages, rest) = HTTPServer.MessageStream.split(stream)
        var framed: [UInt8] = []
        for message in messages { framed += [UInt8(message.count >> 8), UInt8(message.count & 0xFF)] + message }
        try require(framed + rest == stream, "the messages and the rest are not the stream")
        try require(HTTPServer.MessageStream.split(Array(rest)).messages.isEmpty, "a whole message was left in the rest")
        // Read as a connection reads it: what arrived so far, split after every read.
        var buffer: [UInt8] = []
        var pieces: [[UInt8]] = []
        var offset = 0
        while offset < stream.count {
            buffer += stream[offset..<min(stream.count, offset + step)]
            offset += step
            let split = HTTPServer.MessageStream.split(buffer)
            pieces += split.messages.map(Array.init)
            buffer = Array(split.rest)
        }
        try require(pieces == messages.map { Array($0) }, "reads of \(step) bytes frame differently")
        try require(buffer == Array(rest), "reads of \(step) bytes leave another rest")
        for message in messages.prefix(4) {
            var request = HTTPServer.Request(
                method: "POST", path: "/dns-query", headers: [.init(name: "Content-Type", value: HTTPDNSService.dnsMessageType)],
                body: Data(message))
            request.isMessage = true
            let response = dotService.handle(request)
            guard response.status == 200, case .data(let body) = response.body else { continue }
            try require(message.count >= 2 && body.prefix(2) == Data(message.prefix(2)), "an answer under another ID")
            // RFC 8467 §4.1: a padded query's answer is a multiple of 468 bytes when it has an OPT record.
            guard let query = try? DNSMessage(decoding: Array(message)), let options = query.edns?.options,
                hasPadding(options), let answer = try? DNSMessage(decoding: [UInt8](body)), answer.edns != nil
            else { continue }
            try require(body.count % 468 == 0, "a padded query's answer of \(body.count) bytes")
        }
    }

    /// Whether EDNS options (code, length, data triples) hold a Padding option (code 12).
    private static func hasPadding(_ options: [UInt8]) -> Bool {
        var offset = 0
        while offset + 4 <= options.count {
            if options[offset] == 0, options[offset + 1] == 12 { return true }
            offset += 4 + (Int(options[offset + 2]) << 8 | Int(options[offset + 3]))
        }
        return false
    }
}
