import CQUIC

/// DNS over QUIC as the stub's `doq=` client reads an answer stream (RFC 9250 §4.2): the CQUIC
/// client's own function (`httpdns_quic_client_stream_state`), fed the stream in reads of any size as
/// ngtcp2 hands them over, deciding at the first whole answer or the first sign of a broken stream.
extension HTTPDNSFuzzTarget {
    static let clientDoQ = HTTPDNSFuzzTarget(
        "client-doq",
        "a DoQ answer stream read in pieces: an answer only when it is exactly its length prefix and a message, the same whatever the reads; short or long streams fail"
    ) { bytes throws(HTTPDNSFuzzFailure) in
        // The first byte: the size of the reads (1-64 bytes); the second: whether the stream ends
        // (FIN) after its last byte; the rest: the stream.
        var input = FuzzInput(bytes)
        let step = input.choice(64) + 1
        let ends = input.choice(2) == 1
        let stream = input.rest
        let announced = stream.count >= 2 ? Int(stream[0]) << 8 | Int(stream[1]) : -1
        var received: [UInt8] = []
        var offset = 0
        var outcome: Int32 = 0
        var messageLength = 0
        repeat {
            let end = min(stream.count, offset + step)
            received += stream[offset..<end]
            offset = end
            let fin: Int32 = ends && offset == stream.count ? 1 : 0
            var length = 0
            outcome = received.withUnsafeBufferPointer { httpdns_quic_client_stream_state($0.baseAddress, $0.count, fin, &length) }
            messageLength = length
        } while outcome == 0 && offset < stream.count
        let finished = ends && offset == stream.count
        switch outcome {
        case 1:
            try require(announced >= 12 && messageLength == announced, "an answer of \(messageLength) bytes under a prefix of \(announced)")
            try require(received.count == 2 + announced, "an answer taken from \(received.count) bytes, prefix \(announced)")
        case -1:
            let long = received.count > 65_537 || (received.count >= 2 && (announced < 12 || received.count > 2 + announced))
            try require(long || finished, "a stream of \(received.count) bytes (prefix \(announced), ended: \(finished)) refused")
        case 0:
            try require(!finished, "an ended stream left undecided")
            try require(received.count < 2 || received.count < 2 + announced, "a whole answer left undecided")
        default:
            try require(false, "outcome \(outcome)")
        }
        // Whatever the reads, a stream of exactly one length prefix and a message of 12 bytes or
        // more is an answer.
        if announced >= 12, stream.count == 2 + announced {
            try require(outcome == 1, "a whole answer read in pieces of \(step) refused")
        }
    }
}
