import Foundation
import HTTPDNSTransport
import Synchronization
import XCTest

/// The receive window's arithmetic and the receive buffer's reader side, without sockets.
final class TransportReceiveBufferTests: XCTestCase {
    func testWindowRefusesPastTheLimitAndResumesOnceBelowTheMark() {
        var window = HTTPTransportReceiveWindow(limit: 100, resumeBelow: 30)
        XCTAssertTrue(window.offer(60))
        window.append(60)
        XCTAssertTrue(window.offer(40), "exactly the limit fits")
        window.append(40)
        XCTAssertFalse(window.offer(1))
        XCTAssertTrue(window.isPaused)
        XCTAssertFalse(window.offer(1), "refused again while paused")
        XCTAssertFalse(window.read(60), "40 still wait, above the resume mark")
        XCTAssertTrue(window.isPaused)
        XCTAssertTrue(window.read(10), "30 wait: resume")
        XCTAssertFalse(window.isPaused)
        XCTAssertFalse(window.read(30), "one resume per pause")
        XCTAssertEqual(window.buffered, 0)
    }

    func testWindowTakesAChunkLargerThanTheLimitWhenNothingWaits() {
        var window = HTTPTransportReceiveWindow(limit: 10, resumeBelow: 0)
        XCTAssertTrue(window.offer(50), "refusing it would pause for ever: nothing waits to be read")
        window.append(50)
        XCTAssertFalse(window.offer(1))
        XCTAssertTrue(window.read(50))
    }

    func testChunksThenFailureArriveInOrder() async {
        let buffer = HTTPTransportReceiveBuffer(limit: 1 << 20, resumeBelow: 0)
        let stream = buffer.makeStream { XCTFail("a body that ended is not cancelled") }
        buffer.append(Data("one".utf8))
        buffer.append(Data())
        buffer.append(Data("two".utf8))
        buffer.finish(throwing: HTTPTransportError(.networkConnectionLost, "gone"))
        buffer.append(Data("late".utf8))
        var chunks: [String] = []
        do {
            for try await chunk in stream { chunks.append(String(decoding: chunk, as: UTF8.self)) }
            XCTFail("the failure must be thrown")
        } catch {
            XCTAssertEqual((error as? HTTPTransportError)?.code, .networkConnectionLost)
        }
        XCTAssertEqual(chunks, ["one", "two"])
        XCTAssertEqual(buffer.window.buffered, 0)
    }

    func testAWaitingReaderGetsChunksAsTheyCome() async throws {
        let buffer = HTTPTransportReceiveBuffer()
        let stream = buffer.makeStream {}
        let reader = Task {
            var text = ""
            for try await chunk in stream { text += String(decoding: chunk, as: UTF8.self) }
            return text
        }
        for word in ["a", "b", "c"] {
            try await Task.sleep(for: .milliseconds(20))
            buffer.append(Data(word.utf8))
        }
        buffer.finish()
        let text = try await reader.value
        XCTAssertEqual(text, "abc")
    }

    func testReleasingTheStreamEarlyCancelsOnce() async throws {
        let buffer = HTTPTransportReceiveBuffer()
        let cancels = Atomic<Int>(0)
        func readOne() async throws -> Data? {
            let stream = buffer.makeStream { cancels.add(1, ordering: .relaxed) }
            buffer.append(Data("first".utf8))
            buffer.append(Data("second".utf8))
            for try await chunk in stream { return chunk }
            return nil
        }
        let first = try await readOne()
        XCTAssertEqual(first, Data("first".utf8))
        XCTAssertEqual(cancels.load(ordering: .relaxed), 1)
        buffer.append(Data("third".utf8))
        buffer.finish()
        XCTAssertEqual(cancels.load(ordering: .relaxed), 1)
    }

    func testCancellingTheReaderEndsQuietlyAndCancels() async throws {
        let buffer = HTTPTransportReceiveBuffer()
        let cancels = Atomic<Int>(0)
        let stream = buffer.makeStream { cancels.add(1, ordering: .relaxed) }
        let reader = Task {
            var count = 0
            for try await chunk in stream { count += chunk.count }
            return count
        }
        buffer.append(Data(count: 10))
        try await Task.sleep(for: .milliseconds(50))
        reader.cancel()
        let count = try await reader.value
        XCTAssertEqual(count, 10)
        XCTAssertEqual(cancels.load(ordering: .relaxed), 1)
    }

    func testReleasingAStreamReadToTheEndDoesNotCancel() async throws {
        let buffer = HTTPTransportReceiveBuffer()
        func readAll() async throws -> Int {
            let stream = buffer.makeStream { XCTFail("a body that ended is not cancelled") }
            buffer.append(Data(count: 5))
            buffer.finish()
            var count = 0
            for try await chunk in stream { count += chunk.count }
            return count
        }
        let count = try await readAll()
        XCTAssertEqual(count, 5)
    }
}
