import DNSWire
import Foundation
import HTTPDNSCore
import HTTPDNSStub
import HTTPDNSTestSupport
import XCTest

/// A `dot=` upstream in process, where no TLS server answers: a connect that never completes
/// times out at the query's deadline, a cancelled query ends at once, and a refused connect fails
/// at once (the group then asks the next upstream). The exchanges with a real DoT server are in
/// `StubDoTUpstreamTests` (dnsdist).
final class DNSStubTLSUpstreamTests: XCTestCase {
    private func upstream(port: Int) throws -> any DNSStubUpstream {
        try DNSStubUpstreamSpec(parsing: "dot=127.0.0.1:\(port)#dot.test").makeUpstream(transport: nil)
    }

    private func query() throws -> DNSMessage {
        DNSMessage.makeQuery(name: try DNSName("a.dot.test"), type: .A)
    }

    func testSilentServerTimesOutAtTheDeadline() async throws {
        let listener = try StalledListener(address: "127.0.0.1")
        let upstream = try upstream(port: listener.port)
        XCTAssertEqual(upstream.name, "dot=127.0.0.1:\(listener.port)#dot.test")
        let start = ContinuousClock.now
        do {
            _ = try await upstream.exchange(try query(), timeout: .milliseconds(300))
            XCTFail("an answer from a server that never accepted")
        } catch let error as HTTPDNSError {
            XCTAssertEqual(error.code, .timedOut, "\(error)")
            XCTAssertEqual(error.source, upstream.name)
        }
        let elapsed = ContinuousClock.now - start
        XCTAssertGreaterThanOrEqual(elapsed, .milliseconds(250))
        XCTAssertLessThan(elapsed, .seconds(2))
    }

    func testCancelledQueryEndsAtOnce() throws {
        let listener = try StalledListener(address: "127.0.0.1")
        let upstream = try upstream(port: listener.port)
        let result = HTTPDNSLock<Result<DNSMessage, any Error>?>(nil)
        let done = expectation(description: "completion")
        let cancellation = upstream.exchange(try query(), timeout: .seconds(10)) { outcome in
            result.withLock { $0 = outcome }
            done.fulfill()
        }
        usleep(50_000)
        let start = ContinuousClock.now
        cancellation.cancel()
        wait(for: [done], timeout: 2)
        XCTAssertLessThan(ContinuousClock.now - start, .milliseconds(500))
        guard case .failure(let error as HTTPDNSError) = result.withLock({ $0 }) else {
            return XCTFail("\(String(describing: result.withLock { $0 }))")
        }
        XCTAssertEqual(error.code, .cancelled)
        cancellation.cancel()
    }

    func testRefusedConnectFailsAtOnce() async throws {
        let port = try Dnsmasq.freePort(on: HTTPDNSIPAddress("127.0.0.1")!)
        let upstream = try upstream(port: Int(port))
        let start = ContinuousClock.now
        do {
            _ = try await upstream.exchange(try query(), timeout: .seconds(5))
            XCTFail("an answer from a closed port")
        } catch let error as HTTPDNSError {
            XCTAssertEqual(error.code, .transport, "\(error)")
            XCTAssertTrue(error.detail.contains("refused"), error.detail)
        }
        XCTAssertLessThan(ContinuousClock.now - start, .seconds(1), "not waiting for the timeout")
    }
}
