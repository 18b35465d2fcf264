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

/// Connection racing (RFC 8305) and address ranking against a blackholed address: a network
/// namespace made by the test drops every TCP packet to its addresses, so a connection there neither
/// succeeds nor fails until the connect timeout.
final class HappyEyeballsTests: XCTestCase {
    private var namespace: BlackholeNamespace!
    private var server: TestHTTPServer!

    override func setUpWithError() throws {
        namespace = try BlackholeNamespace()
        server = try TestHTTPServer(address: namespace.reachableV4.description)
    }

    override func tearDown() {
        server?.stop()
        namespace?.remove()
    }

    func testHappyEyeballsRacesPastABlackholedFirstAddress() async throws {
        let blackhole = namespace.blackholeV4[0], reachable = namespace.reachableV4
        let monitor = ConnectionMonitor()
        let engine = Self.engine(["he.test": [blackhole, reachable]])
        let client = Self.client(engine) {
            $0.connectTimeout = .seconds(20)
            $0.monitor = monitor
        }

        let response = try await client.send(URLRequest(url: url("he.test")))
        XCTAssertEqual(response.response.statusCode, 200)
        let report = response.connection
        XCTAssertEqual(report.connectedAddress, reachable)
        XCTAssertEqual(report.attempts.map(\.address), [blackhole, reachable], "the blackholed address first, then the one that answered")
        XCTAssertTrue(report.attempts[0].failure?.hasPrefix("raced past") == true, "\(report.attempts)")
        XCTAssertNil(report.attempts[1].failure)
        // The README's delay: the reachable address joins 250 ms after the blackholed one started,
        // and connects at once over the namespace's veth, so the blackholed attempt is raced past
        // after 250 ms plus that connect. Never earlier (the timer cannot fire early); later by at
        // most the tolerance, which a loaded two-core machine needs for scheduling. Without racing the
        // blackholed address would hold the request for the whole 20 s connect timeout.
        let delay = 250, tolerance = 500
        let waited = try XCTUnwrap(
            report.attempts[0].failure.flatMap { Int($0.split(separator: " ").dropLast().last ?? "") },
            "\(report.attempts)")
        XCTAssertGreaterThanOrEqual(waited, delay, "raced past before the attempt delay: \(report.attempts)")
        XCTAssertLessThanOrEqual(waited, delay + tolerance, "raced past \(waited) ms after the first attempt: \(report.attempts)")
        XCTAssertGreaterThanOrEqual(report.timings.firstByte, .milliseconds(delay))
        XCTAssertLessThan(report.timings.firstByte, .milliseconds(delay + tolerance + 500), "first byte \(report.timings.firstByte)")
        XCTAssertFalse(engine.isCoolingDown(blackhole), "slow is not failed: no cool-down")
        XCTAssertTrue(monitor.failures.isEmpty, "an address raced past is not a failed connection: \(monitor.failures)")
        XCTAssertEqual(server.requests.count, 1, "the request was sent once")
    }

    func testHappyEyeballsPrefersTheFasterAddressNextTime() async throws {
        let blackhole = namespace.blackholeV4[0], reachable = namespace.reachableV4
        let engine = Self.engine(["he.test": [blackhole, reachable]])
        _ = try await Self.client(engine) { $0.connectTimeout = .seconds(20) }.send(URLRequest(url: url("he.test")))
        let fast = try XCTUnwrap(engine.connectTimeEstimate(reachable))
        let slow = try XCTUnwrap(engine.connectTimeEstimate(blackhole), "the address raced past is remembered as slow")
        XCTAssertLessThan(fast, slow)

        // A new transport: no connection to reuse, so the order decides where the next one goes.
        let second = try await Self.client(engine) { $0.connectTimeout = .seconds(20) }.send(URLRequest(url: url("he.test")))
        XCTAssertEqual(second.connection.attempts.map(\.address), [reachable], "straight to the faster address")
        XCTAssertEqual(second.connection.answer?.addresses.first, blackhole, "while the answer still lists the blackholed one first")
        XCTAssertGreaterThan(second.connection.timings.connect, .zero, "a new connection was made")
    }

    func testHappyEyeballsInterleavesTheFamilies() async throws {
        // Two blackholed IPv4 addresses, then the reachable IPv6 one: interleaving (RFC 8305 §4)
        // makes IPv6 the second attempt instead of the third.
        let v6Server = try TestHTTPServer(address: namespace.reachableV6.description, port: server.port)
        defer { v6Server.stop() }
        let blackholes = namespace.blackholeV4, reachable = namespace.reachableV6
        let engine = Self.engine(["he.test": blackholes + [reachable]], family: .both)
        let client = Self.client(engine) { $0.connectTimeout = .seconds(20) }

        let response = try await client.send(URLRequest(url: url("he.test")))
        XCTAssertEqual(response.connection.connectedAddress, reachable)
        XCTAssertEqual(response.connection.attempts.map(\.address), [blackholes[0], reachable])
        XCTAssertEqual(v6Server.requests.count, 1)
    }

    func testHappyEyeballsOffWaitsForEachAddressToFail() async throws {
        let blackhole = namespace.blackholeV4[0], reachable = namespace.reachableV4
        let monitor = ConnectionMonitor()
        let engine = Self.engine(["he.test": [blackhole, reachable]])
        let client = Self.client(engine) {
            $0.monitor = monitor
            $0.connectionAttemptDelay = nil
            $0.connectTimeout = .seconds(1)
        }

        let response = try await client.send(URLRequest(url: url("he.test")))
        XCTAssertEqual(response.connection.connectedAddress, reachable)
        XCTAssertEqual(response.connection.attempts.map(\.address), [blackhole, reachable])
        XCTAssertTrue(response.connection.attempts[0].failure?.hasPrefix("timedOut") == true, "\(response.connection.attempts)")
        XCTAssertEqual(monitor.failures.map(\.address), [blackhole], "one connectionFailed event for the address that timed out")
        XCTAssertEqual(monitor.failures.first?.code, .timedOut)
        XCTAssertTrue(engine.isCoolingDown(blackhole))
    }

    private func url(_ host: String) -> URL {
        URL(string: "http://\(host):\(server.port)/echo")!
    }

    static func engine(
        _ table: [String: [HTTPDNSIPAddress]], family: HTTPDNSAddressFamily = .ipv4, monitor: (any HTTPDNSEventMonitor)? = nil,
        trusting certificates: TestCertificates? = nil
    ) -> HTTPDNSEngine {
        var configuration = HTTPDNSConfiguration(resolvers: [HTTPDNSStaticResolver(table, ttl: 300, name: "table")])
        configuration.hygiene = .init(allowPrivate: true)
        if let certificates { configuration.trust = .caFile(certificates.caCertificatePath) }
        configuration.protectedHosts = HTTPDNSHostPolicy(["*.test"])
        configuration.localDNS = .custom(HTTPDNSStaticResolver([:], name: "no-localdns"))
        configuration.family = family
        if let monitor { configuration.monitor = monitor }
        return HTTPDNSEngine(configuration: configuration)
    }

    /// A client with a transport of its own (no connection shared with other tests), reading no proxy.
    static func client(_ engine: HTTPDNSEngine, configure: (inout HTTPDNSClient.Configuration) -> Void = { _ in }) -> HTTPDNSClient {
        var configuration = HTTPDNSClient.Configuration()
        configuration.proxyEnvironment = [:]
        configure(&configuration)
        return HTTPDNSClient(engine: engine, transport: HTTPTransport(), configuration: configuration)
    }
}

/// Records `connectionFailed` events.
final class ConnectionMonitor: HTTPDNSConnectionMonitor {
    private let recorded = HTTPDNSLock<[(address: HTTPDNSIPAddress, code: URLError.Code?)]>([])

    var failures: [(address: HTTPDNSIPAddress, code: URLError.Code?)] { recorded.withLock { $0 } }

    func connectionFailed(address: HTTPDNSIPAddress, error: any Error) {
        recorded.withLock { $0.append((address, (error as? URLError)?.code)) }
    }
}
