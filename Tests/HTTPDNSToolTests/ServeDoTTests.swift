import Foundation
import HTTPDNSCore
import HTTPDNSTestSupport
import HTTPServing
import XCTest

/// `httpdns serve --listen tls://…`: DNS over TLS (RFC 7858) from the built binary, asked by
/// ``DoTClient`` (Python's OpenSSL and dnspython): pipelining with answers out of order, padding,
/// views from EDNS Client Subnet and from a trusted balancer's PROXY v2 header, metrics and the
/// access log, the idle and half-sent deadlines, a crowd of idle and stalled connections, and a
/// drain under load that answers every query it received.
final class ServeDoTTests: ToolTestCase {
    private var certificates: TestCertificates!
    private var leaf: TestCertificates.Leaf!
    private var directory: URL!

    override func setUpWithError() throws {
        try super.setUpWithError()
        certificates = try TestCertificates()
        leaf = try certificates.issue(dnsNames: ["dns.example.test"], ipAddresses: [HTTPDNSIPAddress("127.0.0.1")!])
        directory = try temporaryDirectory()
        try Data(#"{"views": [{"name": "carrier-a", "networks": ["10.1.0.0/16"]}]}"#.utf8)
            .write(to: directory.appendingPathComponent("views.json"))
        try Data(#"{"www.example.test": {"A": ["192.0.2.1"], "ttl": 60, "views": {"carrier-a": {"A": ["198.51.100.1"]}}}}"#.utf8)
            .write(to: directory.appendingPathComponent("zone.json"))
    }

    override func tearDown() {
        certificates?.remove()
        super.tearDown()
    }

    /// Starts serve with a DoT listener and a plain HTTP one (for /metrics); their ports.
    private func serve(_ extra: [String]) throws -> (server: RunningTool, dot: Int, http: String) {
        let (server, urls) = try startServe(
            [
                "--listen", "tls://127.0.0.1:0", "--listen", "http://127.0.0.1:0", "--tls-cert", leaf.certificatePath,
                "--tls-key", leaf.keyPath, "--zone", directory.appendingPathComponent("zone.json").path,
                "--views", directory.appendingPathComponent("views.json").path,
            ] + extra, listeners: 2)
        XCTAssertTrue(urls[0].hasPrefix("tls://127.0.0.1:"), urls[0])
        return (server, try port(of: urls[0]), urls[1])
    }

    private func ask(_ port: Int, _ arguments: [String]) throws -> [String: Any] {
        try XCTUnwrap(try DoTClient.run(["query", String(port), certificates.caCertificatePath] + arguments) as? [String: Any])
    }

    private func metrics(_ url: String) throws -> String {
        let (status, output) = try RunningTool.runToEnd("/usr/bin/curl", ["-sS", "--max-time", "10", "\(url)/metrics"])
        XCTAssertEqual(status, 0, output)
        return output
    }

    func testPipelinedQueriesAreAnsweredAsReadyPaddedWhenAskedAndBounded() throws {
        // An upstream that takes half a second: the zone's answer, asked second, comes first.
        let upstream = try HTTPServer { _ in
            Thread.sleep(forTimeInterval: 0.5)
            return .text("93.184.216.34,60")
        }
        defer { upstream.stop() }
        let (server, dot, _) = try serve([
            "--upstream", "dnspod=\(upstream.baseURL.absoluteString)", "--allow-private", "--dot-max-queries", "4",
        ])
        defer { assertStopsCleanly(server) }
        let order = try XCTUnwrap(
            try DoTClient.run(["pipeline", String(dot), certificates.caCertificatePath, "slow.example.net", "www.example.test"]) as? [[Any]])
        XCTAssertEqual(order.map { $0[0] as? Int }, [2, 1], "the zone's answer did not overtake the upstream's: \(order)")
        XCTAssertEqual(order.last?[1] as? [String], ["93.184.216.34"])

        // RFC 8467 §4.1: a padded query gets a response padded to a multiple of 468 bytes; an
        // unpadded one gets no padding.
        let padded = try ask(dot, ["www.example.test", "pad"])
        XCTAssertEqual(padded["padded"] as? Bool, true)
        XCTAssertEqual((padded["length"] as? Int).map { $0 % 468 }, 0, "\(padded)")
        let plain = try ask(dot, ["www.example.test"])
        XCTAssertEqual(plain["padded"] as? Bool, false)
        XCTAssertEqual(plain["a"] as? [String], ["192.0.2.1"])
        XCTAssertEqual(plain["id"] as? Int, 4242)
        XCTAssertTrue(plain["alpn"] is NSNull, "ALPN chosen although the client offered none: \(plain)")
        // A client offering h2 and dot gets dot: this listener speaks no HTTP.
        XCTAssertEqual(try ask(dot, ["www.example.test", "alpn"])["alpn"] as? String, "dot")

        // 300 queries pipelined at once through a limit of 4 in hand: all answered, none refused.
        let many = try XCTUnwrap(
            try DoTClient.run(["many", String(dot), certificates.caCertificatePath, "www.example.test", "300"]) as? [String: Any])
        XCTAssertEqual(many["answered"] as? Int, 300)
        XCTAssertEqual(many["all"] as? Bool, true)
    }

    func testViewsComeFromClientSubnetThenATrustedProxyHeaderAndAreCountedAndLogged() throws {
        let log = directory.appendingPathComponent("access.log").path
        let (server, dot, http) = try serve(["--trusted-proxy", "127.0.0.1/32", "--access-log", log])
        defer { assertStopsCleanly(server) }
        XCTAssertEqual(try ask(dot, ["www.example.test"])["a"] as? [String], ["192.0.2.1"], "the peer's view")
        XCTAssertEqual(try ask(dot, ["www.example.test", "ecs=10.1.2.0/24"])["a"] as? [String], ["198.51.100.1"], "the subnet's view")
        XCTAssertEqual(try ask(dot, ["www.example.test", "proxy=10.1.2.3"])["a"] as? [String], ["198.51.100.1"], "the balancer's client")
        XCTAssertEqual(
            try ask(dot, ["www.example.test", "proxy=10.1.2.3", "ecs=192.0.2.0/24"])["a"] as? [String], ["192.0.2.1"],
            "the query's own subnet decides before the balancer's word")
        let text = try metrics(http)
        XCTAssertTrue(text.contains(#"httpdns_queries_total{endpoint="dot"} 4"#), text)
        XCTAssertTrue(text.contains(#"httpdns_view_queries_total{view="carrier-a"} 2"#), text)
        var lines: [Substring] = []
        _ = pollUntilBlocking(within: .seconds(10)) {
            lines = String(decoding: FileManager.default.contents(atPath: log) ?? Data(), as: UTF8.self).split(separator: "\n")
            return lines.count >= 4
        }
        XCTAssertEqual(lines.count, 4)
        XCTAssertTrue(lines.allSatisfy { $0.contains(#""protocol":"dot","endpoint":"dot""#) }, lines.joined(separator: "\n"))
        XCTAssertTrue(lines[2].contains(#""client":"10.1.2.3""#), String(lines[2]))
    }

    func testSharedTicketKeysResumeAcrossInstancesAndSIGHUPReloadsTheCertificate() throws {
        let keys = directory.appendingPathComponent("tickets.keys").path
        let key = (0..<80).map { UInt8(truncatingIfNeeded: $0 * 13 + 5) }
        try Data((Data(key).base64EncodedString() + "\n").utf8).write(to: URL(fileURLWithPath: keys))
        let a = try serve(["--tls-ticket-keys", keys])
        defer { assertStopsCleanly(a.server) }
        let b = try serve(["--tls-ticket-keys", keys])
        defer { assertStopsCleanly(b.server) }
        let resumed = try XCTUnwrap(
            try DoTClient.run(["resume", String(a.dot), certificates.caCertificatePath, String(b.dot)]) as? [String: Any])
        XCTAssertEqual(resumed["reused"] as? Bool, true, "a session of one instance did not resume at the other: \(resumed)")
        XCTAssertEqual(resumed["a"] as? [String], ["192.0.2.1"])

        // A certificate from another CA in the same files: after SIGHUP new connections get it.
        let other = try TestCertificates(commonName: "second test CA")
        defer { other.remove() }
        let renewed = try other.issue(dnsNames: ["dns.example.test"])
        try Data(renewed.certificatePEM.utf8).write(to: URL(fileURLWithPath: leaf.certificatePath))
        try Data(renewed.keyPEM.utf8).write(to: URL(fileURLWithPath: leaf.keyPath))
        a.server.send(SIGHUP)
        XCTAssertTrue(pollUntilBlocking(within: .seconds(10)) {
            String(decoding: a.server.stderr, as: UTF8.self).contains("reloaded certificate")
        }, String(decoding: a.server.stderr, as: UTF8.self))
        let afterReload = try DoTClient.run(["query", String(a.dot), other.caCertificatePath, "www.example.test"]) as? [String: Any]
        XCTAssertEqual(afterReload?["a"] as? [String], ["192.0.2.1"])
        XCTAssertThrowsError(try DoTClient.run(["query", String(a.dot), certificates.caCertificatePath, "www.example.test"]),
                             "the old certificate is still served")
    }

    func testIdleAndHalfSentConnectionsAreClosedAtTheIdleTimeout() throws {
        let (server, dot, http) = try serve(["--dot-idle-timeout", "1"])
        defer { assertStopsCleanly(server) }
        let idle = try XCTUnwrap(
            try DoTClient.run(["idle", String(dot), certificates.caCertificatePath, "www.example.test"]) as? [String: Any])
        let idleSeconds = try XCTUnwrap(idle["closed_after"] as? Double, "\(idle)")
        XCTAssertGreaterThan(idleSeconds, 0.8)
        XCTAssertLessThan(idleSeconds, 3)
        let half = try XCTUnwrap(try DoTClient.run(["half", String(dot), certificates.caCertificatePath]) as? [String: Any])
        let halfSeconds = try XCTUnwrap(half["closed_after"] as? Double, "\(half)")
        XCTAssertLessThan(halfSeconds, 3)
        let text = try metrics(http)
        XCTAssertTrue(text.contains(#"httpdns_shed_total{reason="deadline"} 1"#), "the half-sent query was not counted: \(text)")
    }

    func testTheConnectionLimitsCountDoTConnections() throws {
        let (server, dot, http) = try serve(["--max-connections-per-client", "3"])
        defer { assertStopsCleanly(server) }
        let result = try XCTUnwrap(
            try DoTClient.run(["limit", String(dot), certificates.caCertificatePath, "3", "www.example.test"]) as? [String: Any])
        XCTAssertEqual(result["refused"] as? Bool, true, "a fourth connection from one client was taken: \(result)")
        XCTAssertEqual(result["a"] as? [String], ["192.0.2.1"], "a connection within the limit stopped answering")
        XCTAssertTrue(try metrics(http).contains(#"httpdns_shed_total{reason="per-client"} 1"#))
    }

    func testIdleAndStalledCrowdsDoNotStopAnswersAndAreClosed() throws {
        let (server, dot, http) = try serve(["--dot-idle-timeout", "1", "--handshake-timeout", "1"])
        defer { assertStopsCleanly(server) }
        let crowd = try XCTUnwrap(
            try DoTClient.run(["crowd", String(dot), certificates.caCertificatePath, "www.example.test", "200", "200", "2.5"]) as? [String: Any])
        XCTAssertEqual(crowd["a"] as? [String], ["192.0.2.1"])
        XCTAssertLessThan(try XCTUnwrap(crowd["seconds"] as? Double), 1, "\(crowd)")
        XCTAssertEqual(crowd["idleClosed"] as? Int, 200, "\(crowd)")
        XCTAssertEqual(crowd["stalledClosed"] as? Int, 200, "\(crowd)")
        XCTAssertTrue(try pollUntilBlocking(within: .seconds(5)) { try metrics(http).contains("httpdns_open_connections 1\n") })
    }

    func testTheDrainAnswersEveryQueryReceivedUnderLoad() throws {
        let (server, dot, _) = try serve(["--drain-timeout", "20", "--threads", "2"])
        let client = try DoTClient.start(["drain", String(dot), certificates.caCertificatePath, "www.example.test", "8", "150"])
        _ = try client.waitForLine(startingWith: "half", timeout: .seconds(30))
        server.send(SIGTERM)
        XCTAssertEqual(try client.wait(timeout: .seconds(60)), 0, String(decoding: client.stderr, as: UTF8.self))
        let line = String(decoding: client.stdout, as: UTF8.self).split(separator: "\n").last.map(String.init) ?? ""
        let result = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], line)
        XCTAssertEqual(result["sent"] as? Int, 1200)
        XCTAssertEqual(result["answered"] as? Int, 1200, "\(result); client stderr: \(String(decoding: client.stderr, as: UTF8.self))")
        XCTAssertEqual(result["closed"] as? Bool, true, "the drain left a connection open")
        assertStopsCleanly(server, signalled: true)
        XCTAssertFalse(String(decoding: server.stderr, as: UTF8.self).contains("cut"), String(decoding: server.stderr, as: UTF8.self))
    }
}
