import HTTPServing
import XCTest

/// The framing of a message-stream connection (`HTTPServer.MessageStream.split`, the C loop's own
/// function): a two-byte big-endian length, then the message (RFC 1035 §4.2.2; RFC 7858 §3.3); and
/// of a DNS-over-QUIC stream (`quicFrame`, the QUIC server's own): one such message, ID 0, then FIN.
final class HTTPServerMessageStreamTests: XCTestCase {
    private func framed(_ messages: [[UInt8]]) -> [UInt8] {
        messages.flatMap { [UInt8($0.count >> 8), UInt8($0.count & 0xFF)] + $0 }
    }

    func testEveryTruncationYieldsTheWholeMessagesBeforeItAndKeepsTheRest() {
        // An empty message, a short one, and one of 300 bytes (a length with both bytes set).
        let messages: [[UInt8]] = [[], [1, 2, 3], (0..<300).map { UInt8(truncatingIfNeeded: $0) }]
        let stream = framed(messages)
        var ends: [Int] = []
        var offset = 0
        for message in messages {
            offset += 2 + message.count
            ends.append(offset)
        }
        for length in 0...stream.count {
            let (found, rest) = HTTPServer.MessageStream.split(Array(stream.prefix(length)))
            let whole = ends.filter { $0 <= length }.count
            XCTAssertEqual(found.map { Array($0) }, Array(messages.prefix(whole)), "after \(length) bytes")
            XCTAssertEqual(Array(rest), Array(stream[(whole == 0 ? 0 : ends[whole - 1])..<length]), "the rest after \(length) bytes")
        }
    }

    func testTheLargestMessageAndALengthPastTheBytesRead() {
        let largest = [UInt8](repeating: 7, count: 65_535)
        let (found, rest) = HTTPServer.MessageStream.split(framed([largest]) + [0xFF, 0xFF, 1])
        XCTAssertEqual(found.map(\.count), [65_535])
        XCTAssertEqual(Array(rest), [0xFF, 0xFF, 1], "a message announced at 65,535 bytes waits for them")
    }

    func testADoQStreamHoldsOneQueryWithIDZeroAndNothingAfterIt() {
        // A 12-byte header with ID 0, then a question of 5 bytes (the root, type A, class IN).
        let query: [UInt8] = [0, 0, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 1]
        let stream = framed([query])
        for length in 0..<stream.count {
            XCTAssertEqual(HTTPServer.MessageStream.quicFrame(Array(stream.prefix(length)), fin: false), .needMore, "after \(length) bytes")
            XCTAssertEqual(HTTPServer.MessageStream.quicFrame(Array(stream.prefix(length)), fin: true), .protocolError, "FIN after \(length) bytes")
        }
        XCTAssertEqual(HTTPServer.MessageStream.quicFrame(stream, fin: false), .query(query.count), "whole before its FIN")
        XCTAssertEqual(HTTPServer.MessageStream.quicFrame(stream, fin: true), .query(query.count))
        XCTAssertEqual(HTTPServer.MessageStream.quicFrame(stream + [0], fin: false), .protocolError, "a byte past the query")
        XCTAssertEqual(HTTPServer.MessageStream.quicFrame(framed([[0, 1] + query.dropFirst(2)]), fin: true), .protocolError, "ID 1")
        XCTAssertEqual(HTTPServer.MessageStream.quicFrame(Array(framed([[0, 1] + query.dropFirst(2)]).prefix(4)), fin: false), .protocolError,
                       "a nonzero ID is refused as soon as it arrives")
        XCTAssertEqual(HTTPServer.MessageStream.quicFrame(framed([Array(query.prefix(11))]), fin: true), .protocolError, "shorter than a header")
        let largest = [0, 0] + [UInt8](repeating: 7, count: 65_533)
        XCTAssertEqual(HTTPServer.MessageStream.quicFrame(framed([largest]), fin: true), .query(65_535))
    }
}
