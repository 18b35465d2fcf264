import Foundation
import HTTPDNSCore
import HTTPDNSServer
import HTTPDNSTestSupport
import HTTPServing
import XCTest

/// The `tcp` check's connect prober: a connection made, refused or never answered is told apart,
/// within the timeout, and many probes share its one poll thread.
final class HTTPDNSTCPConnectProberTests: XCTestCase {
    func testConnectedRefusedAndTimedOut() async throws {
        let prober = HTTPDNSTCPConnectProber()
        defer { prober.stop() }
        let server = try HTTPServer(configuration: .init(address: HTTPDNSIPAddress("127.0.0.1")!, port: 0)) { _ in .text("up\n") }
        defer { server.stop(drain: .zero) }
        let loopback = HTTPDNSIPAddress("127.0.0.1")!
        let up = await prober.connect(to: loopback, port: server.port, timeout: .seconds(2))
        XCTAssertNil(up)
        // Nothing listens on 127.0.0.2 at that port: refused at once.
        let refused = await prober.connect(to: HTTPDNSIPAddress("127.0.0.2")!, port: server.port, timeout: .seconds(2))
        XCTAssertEqual(refused, "Connection refused")
        // A listener whose queue is full never completes the handshake: the timeout decides.
        let stalled = try StalledListener(address: "127.0.0.3")
        let started = ContinuousClock.now
        let silent = await prober.connect(to: HTTPDNSIPAddress("127.0.0.3")!, port: stalled.port, timeout: .milliseconds(300))
        let took = ContinuousClock.now - started
        XCTAssertEqual(silent, "timed out")
        XCTAssertGreaterThanOrEqual(took, .milliseconds(300))
        XCTAssertLessThan(took, .seconds(2), "the timeout bounds a probe that gets no answer")
        withExtendedLifetime(stalled) {}
        let port = await prober.connect(to: loopback, port: 0, timeout: .seconds(1))
        XCTAssertEqual(port, "port 0 out of range")
    }

    func testManyProbesAtOnceShareTheThread() async throws {
        let prober = HTTPDNSTCPConnectProber()
        defer { prober.stop() }
        let server = try HTTPServer(configuration: .init(address: HTTPDNSIPAddress("127.0.0.1")!, port: 0)) { _ in .text("up\n") }
        defer { server.stop(drain: .zero) }
        let port = server.port
        let results = await withTaskGroup(of: String?.self) { group in
            for index in 0..<200 {
                // Half to the listener, half to addresses where nothing listens.
                let address = HTTPDNSIPAddress(index % 2 == 0 ? "127.0.0.1" : "127.0.9.\(index % 250 + 1)")!
                group.addTask { await prober.connect(to: address, port: port, timeout: .seconds(5)) }
            }
            var all: [String?] = []
            for await result in group { all.append(result) }
            return all
        }
        XCTAssertEqual(results.count { $0 == nil }, 100)
        XCTAssertEqual(results.count { $0 == "Connection refused" }, 100)
    }

    func testStopEndsProbesInFlight() async throws {
        let prober = HTTPDNSTCPConnectProber()
        let stalled = try StalledListener(address: "127.0.0.4")
        async let result = prober.connect(to: HTTPDNSIPAddress("127.0.0.4")!, port: stalled.port, timeout: .seconds(30))
        try await Task.sleep(for: .milliseconds(50))
        prober.stop()
        let outcome = await result
        XCTAssertEqual(outcome, "the prober has stopped")
        withExtendedLifetime(stalled) {}
    }
}
