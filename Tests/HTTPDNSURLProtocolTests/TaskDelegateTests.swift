import Foundation
import HTTPDNSURLSession
import XCTest
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The async API's per-task delegate (`data(for:delegate:)`), which corelibs keeps only in the task
/// registry's `…WithTaskDelegate` cases, gets the body chunk by chunk and the upload progress: read
/// from the case's payload, learned on the first request and reused by the next ones.
final class TaskDelegateTests: XCTestCase {
    func testTheAsyncAPIsTaskDelegateSeesEachRequestsBody() async throws {
        let origin = try Origin(address: "127.0.0.1")
        defer { origin.stop() }
        let session = try protectedSession(makeClient(["delegate.test": ["127.0.0.1"]]))
        var request = URLRequest(url: URL(string: "http://delegate.test:\(origin.port)/echo")!)
        request.httpMethod = "POST"
        for size in [70_000, 90_000] {
            let recorder = DataRecorder()
            request.httpBody = Data(repeating: 0x5A, count: size)
            let (data, _) = try await session.data(for: request, delegate: recorder)
            XCTAssertEqual(data.count, size)
            // The delegate's calls go through the session's delegate queue; the completion does not.
            for _ in 0..<200 where recorder.lock.withLock({ recorder.outcome.bytes }) < size {
                try await Task.sleep(for: .milliseconds(10))
            }
            let seen = recorder.lock.withLock { recorder.outcome }
            XCTAssertEqual(seen.bytes, size, "the per-task delegate got the body")
            XCTAssertEqual(seen.bytesSent, Int64(size), "and the upload progress")
        }
        let (empty, response) = try await session.data(from: URL(string: "http://delegate.test:\(origin.port)/")!)
        XCTAssertEqual((response as? HTTPURLResponse)?.statusCode, 200, "the same case without a delegate")
        XCTAssertEqual(empty.count, 0)
    }
}
