/// Splits a TCP byte stream into DNS messages (RFC 1035 §4.2.2, RFC 7766 §8).
///
/// Each message is preceded by a 2-byte big-endian length. Reads may end anywhere — inside the
/// prefix, inside a message, or after several messages — so bytes are buffered until a whole frame
/// is present. The buffer never holds more than one frame plus one read.
package struct DNSTCPFrameReader {
    private var buffer: [UInt8] = []
    private var start = 0

    package init() {}

    /// Appends bytes as they arrive from the socket.
    package mutating func append(_ bytes: some Sequence<UInt8>) {
        if start > 0, start == buffer.count {
            buffer.removeAll(keepingCapacity: true)
            start = 0
        }
        buffer.append(contentsOf: bytes)
    }

    /// The next complete message, or `nil` until more bytes arrive.
    package mutating func nextMessage() -> [UInt8]? {
        guard buffer.count - start >= 2 else { return nil }
        let length = Int(buffer[start]) << 8 | Int(buffer[start + 1])
        guard buffer.count - start - 2 >= length else { return nil }
        let message = Array(buffer[(start + 2)..<(start + 2 + length)])
        start += 2 + length
        if start > 4096 {
            buffer.removeFirst(start)
            start = 0
        }
        return message
    }

    /// Bytes received but not yet returned as a message.
    package var bufferedCount: Int { buffer.count - start }

    /// The wire form of `message` for TCP: length prefix, then the message.
    package static func frame(_ message: [UInt8]) -> [UInt8] {
        [UInt8(message.count >> 8 & 0xFF), UInt8(message.count & 0xFF)] + message
    }
}
