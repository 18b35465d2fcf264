@testable import DNSSockets
import XCTest

final class DNSTCPFrameReaderTests: XCTestCase {
    func testMessagesSplitAnywhere() {
        let first: [UInt8] = Array(1...20)
        let second: [UInt8] = Array(100...130)
        let stream = DNSTCPFrameReader.frame(first) + DNSTCPFrameReader.frame(second)
        // Every way of cutting the stream in two must give the same two messages.
        for cut in 0...stream.count {
            var reader = DNSTCPFrameReader()
            var messages: [[UInt8]] = []
            for part in [stream[0..<cut], stream[cut...]] {
                reader.append(part)
                while let message = reader.nextMessage() { messages.append(message) }
            }
            XCTAssertEqual(messages, [first, second], "cut at \(cut)")
            XCTAssertEqual(reader.bufferedCount, 0)
        }
    }

    func testOneByteAtATime() {
        let message: [UInt8] = Array(repeating: 7, count: 300)
        var reader = DNSTCPFrameReader()
        var result: [[UInt8]] = []
        for byte in DNSTCPFrameReader.frame(message) {
            XCTAssertTrue(result.isEmpty)
            reader.append([byte])
            if let next = reader.nextMessage() { result.append(next) }
        }
        XCTAssertEqual(result, [message])
    }

    func testEmptyFrameAndIncompletePrefix() {
        var reader = DNSTCPFrameReader()
        reader.append([0, 0, 0])
        XCTAssertEqual(reader.nextMessage(), [])
        XCTAssertNil(reader.nextMessage())
        XCTAssertEqual(reader.bufferedCount, 1)
    }
}
