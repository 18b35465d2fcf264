import Foundation
import HTTPDNS
import HTTPDNSCore
import HTTPDNSTestSupport
import HTTPDNSTransport
import HTTPDNSNetworking
import XCTest
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The domain-block redirect (seed 003) made sticky: once a host was reached through the redirect
/// endpoint, later requests go straight to its addresses for the answer's TTL, then through HTTPDNS
/// again.
final class StickyBlockRedirectTests: XCTestCase {
    func testStickyBlockRedirectCostsTheSecondRequestNoFailover() async throws {
        let server = try TestHTTPServer(address: Bed.second.description)
        defer { server.stop() }
        let clock = HTTPDNSManualClock()
        let monitor = ConnectionMonitor()
        let redirect = CountingResolver([Bed.second], ttl: 120)
        let engine = Self.engine(["blocked.test": [Bed.dead]], clock: clock)
        let client = HappyEyeballsTests.client(engine) {
            $0.blockRedirect = redirect
            $0.monitor = monitor
        }
        let url = URL(string: "http://blocked.test:\(server.port)/echo")!

        let first = try await client.send(URLRequest(url: url)).connection
        XCTAssertEqual(first.attempts.map(\.address), [Bed.dead, Bed.second])
        XCTAssertTrue(first.viaBlockRedirect)
        XCTAssertEqual(redirect.calls, 1)
        XCTAssertEqual(engine.upstreamLookupCount, 1)
        XCTAssertEqual(monitor.failures.map(\.address), [Bed.dead])

        let second = try await client.send(URLRequest(url: url)).connection
        XCTAssertEqual(second.attempts.map(\.address), [Bed.second], "one connection attempt, at the redirect address")
        XCTAssertTrue(second.viaBlockRedirect)
        XCTAssertNil(second.answer, "the engine was not asked")
        XCTAssertEqual(engine.upstreamLookupCount, 1, "no upstream lookup")
        XCTAssertEqual(redirect.calls, 1, "no second question to the redirect endpoint")
        XCTAssertEqual(monitor.failures.count, 1, "no connection to the dead address")

        // After the redirect answer's TTL the host goes through HTTPDNS again.
        clock.advance(by: .seconds(121))
        let third = try await client.send(URLRequest(url: url)).connection
        XCTAssertNotNil(third.answer)
        XCTAssertEqual(third.attempts.map(\.address), [Bed.dead, Bed.second])
        XCTAssertEqual(redirect.calls, 2)
        XCTAssertEqual(server.requests.count, 3)
    }

    func testStickyBlockRedirectIsForgottenWhenItsAddressesFail() async throws {
        let server = try TestHTTPServer(address: Bed.second.description)
        let redirect = CountingResolver([Bed.second], ttl: 120)
        let engine = Self.engine(["blocked.test": [Bed.dead]], clock: HTTPDNSManualClock())
        let client = HappyEyeballsTests.client(engine) { $0.blockRedirect = redirect }
        let url = URL(string: "http://blocked.test:\(server.port)/echo")!

        _ = try await client.send(URLRequest(url: url))
        server.stop()
        for expected in [[Bed.second, Bed.dead], [Bed.dead, Bed.second]] {
            do {
                _ = try await client.send(URLRequest(url: url))
                XCTFail("every address is dead")
            } catch let error as URLError {
                // First the remembered redirect address, then HTTPDNS's; then HTTPDNS's first again.
                XCTAssertEqual(error.httpdnsConnectionReport?.attempts.map(\.address), expected)
                XCTAssertNotNil(error.httpdnsConnectionReport?.answer)
            }
        }
    }

    func testStickyBlockRedirectIsNotKeptWhenItsAddressesFail() async throws {
        let redirect = CountingResolver([Bed.dead2], ttl: 120)
        let engine = Self.engine(["blocked.test": [Bed.dead]], clock: HTTPDNSManualClock())
        let client = HappyEyeballsTests.client(engine) { $0.blockRedirect = redirect }
        let url = URL(string: "http://blocked.test:9/echo")!
        for _ in 0..<2 {
            do {
                _ = try await client.send(URLRequest(url: url))
                XCTFail("every address is dead")
            } catch let error as URLError {
                XCTAssertEqual(error.httpdnsConnectionReport?.attempts.map(\.address), [Bed.dead, Bed.dead2])
            }
        }
        XCTAssertEqual(redirect.calls, 2)
    }

    func testStickyBlockRedirectAfterAConnectTimeout() async throws {
        let namespace = try BlackholeNamespace()
        defer { namespace.remove() }
        let server = try TestHTTPServer(address: namespace.reachableV4.description)
        defer { server.stop() }
        let redirect = CountingResolver([namespace.reachableV4], ttl: 120)
        let engine = Self.engine(["blocked.test": [namespace.blackholeV4[0]]], clock: HTTPDNSManualClock())
        let client = HappyEyeballsTests.client(engine) {
            $0.blockRedirect = redirect
            $0.connectTimeout = .seconds(1)
        }
        let url = URL(string: "http://blocked.test:\(server.port)/echo")!

        let first = try await client.send(URLRequest(url: url)).connection
        XCTAssertTrue(first.attempts.first?.failure?.hasPrefix("timedOut") == true, "\(first.attempts)")
        XCTAssertTrue(first.viaBlockRedirect, "a connect timeout is a block signal")
        let second = try await client.send(URLRequest(url: url)).connection
        XCTAssertEqual(second.attempts.map(\.address), [namespace.reachableV4], "no second wait for the blackholed address")
        XCTAssertEqual(redirect.calls, 1)
    }

    static func engine(
        _ table: [String: [HTTPDNSIPAddress]], clock: any HTTPDNSClock, monitor: (any HTTPDNSEventMonitor)? = nil
    ) -> HTTPDNSEngine {
        var configuration = HTTPDNSConfiguration(resolvers: [HTTPDNSStaticResolver(table, ttl: 60, name: "table")])
        configuration.hygiene = .init(allowPrivate: true)
        configuration.protectedHosts = HTTPDNSHostPolicy(["*.test"])
        configuration.localDNS = .custom(HTTPDNSStaticResolver([:], name: "no-localdns"))
        configuration.clock = clock
        if let monitor { configuration.monitor = monitor }
        return HTTPDNSEngine(configuration: configuration)
    }
}

/// A block-redirect endpoint that answers every host with the same addresses and counts questions.
final class CountingResolver: HTTPDNSResolver {
    let name = "redirect"
    private let addresses: [HTTPDNSIPAddress]
    private let ttl: Int
    private let count = HTTPDNSLock(0)

    init(_ addresses: [HTTPDNSIPAddress], ttl: Int) {
        self.addresses = addresses
        self.ttl = ttl
    }

    var calls: Int { count.withLock { $0 } }

    func resolve(_ host: String, family: HTTPDNSAddressFamily) async throws -> HTTPDNSRecordSet {
        count.withLock { $0 += 1 }
        return HTTPDNSRecordSet(host: host, ipv4: addresses, ttl: ttl)
    }
}
