import Foundation
import HTTPDNSCore
import HTTPDNSTransport
import XCTest

final class TransportCancellationTests: TransportTestCase {
    /// Waits (up to 10 s, polling) for `condition`; fails the test when it never holds.
    private func eventually(_ what: String, _ condition: () -> Bool) async {
        for _ in 0..<200 {
            if condition() { return }
            try? await Task.sleep(for: .milliseconds(50))
        }
        XCTFail("never happened: \(what)")
    }

    func testCancellingTheTaskStopsADownload() async throws {
        let server = try startServer()
        let transport = self.transport!
        let request = HTTPTransportRequest(url: url("http://127.0.0.1:\(server.port)/endless?chunk=1024&delayms=5"))
        let task = Task { try await transport.send(request) }
        await eventually("the download started") { server.endlessChunksSent > 5 }
        task.cancel()
        do {
            _ = try await task.value
            XCTFail("an endless download cannot succeed")
        } catch let error as HTTPTransportError {
            XCTAssertEqual(error.code, .cancelled)
            XCTAssertEqual(error.urlError.code, .cancelled)
        }
        await eventually("the connection closed") { server.server.openConnectionCount == 0 }
    }

    func testReleasingAStreamEarlyCancelsTheTransfer() async throws {
        let server = try startServer()
        let request = HTTPTransportRequest(url: url("http://127.0.0.1:\(server.port)/endless?chunk=2048&delayms=2"))
        // The stream is released when this function returns.
        func readSome() async throws -> Int {
            let (head, body) = try await transport.stream(request)
            XCTAssertEqual(head.statusCode, 200)
            var received = 0
            for try await chunk in body {
                received += chunk.count
                if received > 20_000 { break }
            }
            return received
        }
        let received = try await readSome()
        XCTAssertGreaterThan(received, 20_000)
        await eventually("the connection closed") { server.server.openConnectionCount == 0 }
        // The transport is still usable.
        let next = try await transport.send(HTTPTransportRequest(url: url("http://127.0.0.1:\(server.port)/echo")))
        XCTAssertEqual(next.statusCode, 200)
    }

    func testCancellingTheConsumingTaskCancelsTheStream() async throws {
        let server = try startServer()
        let request = HTTPTransportRequest(url: url("http://127.0.0.1:\(server.port)/endless?chunk=1024&delayms=2"))
        let (_, body) = try await transport.stream(request)
        let consumer = Task {
            var count = 0
            do {
                for try await chunk in body { count += chunk.count }
                return "finished after \(count)"
            } catch let error as HTTPTransportError {
                return "\(error.code)"
            } catch {
                return "\(error)"
            }
        }
        await eventually("data flowed") { server.endlessChunksSent > 5 }
        consumer.cancel()
        // AsyncThrowingStream ends quietly when its consumer is cancelled; what matters is that
        // the transfer stops.
        _ = await consumer.value
        await eventually("the connection closed") { server.server.openConnectionCount == 0 }
    }

    func testDelegateTaskCancelReportsCancelledOnce() async throws {
        let server = try startServer()
        let recorder = Recorder()
        let task = try transport.start(
            HTTPTransportRequest(url: url("http://127.0.0.1:\(server.port)/endless?chunk=512&delayms=5")), delegate: recorder)
        await eventually("data arrived") { recorder.snapshot.data > 0 }
        task.cancel()
        let afterCancel = recorder.snapshot.data
        task.cancel()
        await eventually("completion") { recorder.snapshot.completions == 1 }
        let final = recorder.snapshot
        XCTAssertEqual(final.completions, 1)
        XCTAssertEqual(final.error?.code, .cancelled)
        XCTAssertEqual(final.heads, 1)
        // No data is delivered after cancel() returned (one racing chunk at most was in flight).
        XCTAssertLessThanOrEqual(final.data, afterCancel + 1)
        await eventually("the connection closed") { server.server.openConnectionCount == 0 }
    }

    func testCancelledBeforeStartNeverReachesTheServer() async throws {
        let server = try startServer()
        let transport = self.transport!
        let request = HTTPTransportRequest(url: url("http://127.0.0.1:\(server.port)/echo"))
        let task = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await transport.send(request)
        }
        do {
            _ = try await task.value
            XCTFail("a cancelled task must not send")
        } catch let error as HTTPTransportError {
            XCTAssertEqual(error.code, .cancelled)
        }
        XCTAssertTrue(server.requests.isEmpty)
    }
}

/// Counts delegate events.
final class Recorder: HTTPTransportDelegate {
    struct Snapshot {
        var heads = 0
        var data = 0
        var completions = 0
        var error: HTTPTransportError?
    }

    private let state = NSLock()
    nonisolated(unsafe) private var value = Snapshot()

    var snapshot: Snapshot { state.withLock { value } }

    func didReceiveResponse(_ head: HTTPTransportResponseHead) { state.withLock { value.heads += 1 } }
    func didReceiveData(_ data: Data) { state.withLock { value.data += 1 } }
    func didComplete(_ result: Result<HTTPTransportMetrics, HTTPTransportError>) {
        state.withLock {
            value.completions += 1
            if case .failure(let error) = result { value.error = error }
        }
    }
}
