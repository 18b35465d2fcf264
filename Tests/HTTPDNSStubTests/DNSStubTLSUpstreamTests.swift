#if canImport(Glibc)
import Glibc
#endif
import DNSWire
import Foundation
import HTTPDNSCore
import HTTPDNSStub
import HTTPDNSTestSupport
import XCTest

/// A `dot=` upstream in process, where no DNS server answers: a connect that never completes
/// times out at the query's deadline, a cancelled query ends at once, a refused connect fails at
/// once (the group then asks the next upstream), and a TLS connection that carries nothing back
/// after a query timed out on it is replaced. The exchanges with a real DoT server are in
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

    /// `openssl s_server -rev` completes the TLS handshake and then never sends a DNS answer: the
    /// connection looks like one a NAT forgot. After a query timed out on it with nothing received
    /// since, the next query goes on a new connection (two handshakes at the server), not into the
    /// silent one.
    func testSilentConnectionIsReplacedAfterATimeout() async throws {
        let certificates = try TestCertificates()
        defer { certificates.remove() }
        let leaf = try certificates.issue(dnsNames: ["dot.test"])
        let port = try Dnsmasq.freePort(on: HTTPDNSIPAddress("127.0.0.1")!)
        let server = try ToolRunner(executable: URL(fileURLWithPath: "/usr/bin/openssl")).start([
            "s_server", "-accept", "127.0.0.1:\(port)", "-cert", leaf.certificatePath, "-key", leaf.keyPath, "-rev",
        ])
        defer {
            server.send(SIGTERM)
            _ = try? server.wait(timeout: .seconds(5))
        }
        _ = try server.waitForLine(startingWith: "ACCEPT", timeout: .seconds(10))
        let upstream = try DNSStubUpstreamSpec(parsing: "dot=127.0.0.1:\(port)#dot.test")
            .makeUpstream(transport: nil, trust: .caFile(certificates.caCertificatePath))
        for attempt in 0..<2 {
            do {
                // Long enough for the handshake on a loaded machine: the query must time out on an
                // open connection.
                _ = try await upstream.exchange(try query(), timeout: .milliseconds(500))
                XCTFail("an answer from a server that sends none")
            } catch let error as HTTPDNSError {
                XCTAssertEqual(error.code, .timedOut, "attempt \(attempt): \(error)")
            }
        }
        var established = 0
        let deadline = ContinuousClock.now + .seconds(5)
        while established < 2, ContinuousClock.now < deadline {
            // s_server tells each handshake done on stderr.
            established = String(decoding: server.stderr, as: UTF8.self).components(separatedBy: "CONNECTION ESTABLISHED").count - 1
            if established < 2 { usleep(20_000) }
        }
        XCTAssertEqual(established, 2, "the silent connection was replaced, not reused: \(String(decoding: server.stderr, as: UTF8.self).prefix(500))")
    }
}
