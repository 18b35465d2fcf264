import Foundation
import HTTPDNSCore
import HTTPDNSServer
import HTTPDNSTestSupport
import XCTest

/// Every limit flag of `httpdns serve` passed to the binary and seen to act (issue 25: until these,
/// only their help text was checked and the mapping in `Command+Serve.swift` never ran).
/// `--reuse-port` is `ServeCommandOperationsTests.testTwoInstancesShareAPortWithReusePort`,
/// `--drain-timeout` `ServeBinaryOperationsTests`.
final class ServeBinaryLimitsTests: ToolTestCase {
    /// `--max-connections 2 --max-connections-per-client 1 --threads 3`: three named loop threads;
    /// a second connection from one address reads 503, a third connection in all reads 503, each
    /// counted under its reason; once a connection closes another client is served.
    func testConnectionLimitsAndLoopThreads() throws {
        let (server, urls) = try startServe([
            "--listen", "127.0.0.1:0", "--zone", try zoneFile().path,
            "--max-connections", "2", "--max-connections-per-client", "1", "--threads", "3",
        ])
        defer { assertStopsCleanly(server) }
        let port = try port(of: urls[0])
        let loops = Self.threadNames(server.processIdentifier).filter { $0.hasPrefix("http loop ") }.sorted()
        XCTAssertEqual(loops, ["http loop 0", "http loop 1", "http loop 2"], "\(Self.threadNames(server.processIdentifier))")

        // Each kept connection is answered before the next connects, so it is known to be counted.
        let first = try RawHTTPClient(port: port, source: "127.0.0.1")
        XCTAssertEqual(Self.ask(first).body, "192.0.2.10")
        let sameAddress = try RawHTTPClient(port: port, source: "127.0.0.1")
        let perClient = Self.ask(sameAddress)
        XCTAssertEqual(perClient.status, 503, "a second connection from 127.0.0.1")
        XCTAssertTrue(perClient.body.contains("over capacity"), perClient.body)
        var second: RawHTTPClient? = try RawHTTPClient(port: port, source: "127.0.0.2")
        XCTAssertEqual(Self.ask(try XCTUnwrap(second)).body, "192.0.2.10", "another address is served")
        let third = try RawHTTPClient(port: port, source: "127.0.0.3")
        XCTAssertEqual(Self.ask(third).status, 503, "a third connection in all")
        // Read on the kept connection: the two refusals, each under its reason.
        first.send("GET /metrics HTTP/1.1\r\nHost: t\r\n\r\n")
        let metrics = first.readResponse(timeout: 10).body
        XCTAssertTrue(metrics.contains(#"httpdns_shed_total{reason="per-client"} 1"#), metrics)
        XCTAssertTrue(metrics.contains(#"httpdns_shed_total{reason="connections"} 1"#), metrics)
        XCTAssertTrue(metrics.contains("httpdns_open_connections 2"), metrics)
        second = nil
        XCTAssertTrue(try pollUntilBlocking(every: .milliseconds(20)) {
            Self.ask(try RawHTTPClient(port: port, source: "127.0.0.3")).status == 200
        }, "a freed slot serves the next client")
    }

    /// `--request-timeout 1 --handshake-timeout 3 --idle-timeout 5`, each apart from the others and
    /// from the defaults (10, 10, 30): a slowloris head reads 408 at 1 s and an idle keep-alive
    /// connection closes at 1 s; a TCP connection that never sends a ClientHello is closed at 3 s;
    /// an idle HTTP/2 connection gets GOAWAY and is closed at 5 s. Only the slowloris counts as shed.
    func testEachTimeoutFlagCutsAtItsOwnDeadline() throws {
        let certificates = try TestCertificates()
        defer { certificates.remove() }
        let leaf = try certificates.issue(dnsNames: ["localhost"], ipAddresses: [HTTPDNSIPAddress("127.0.0.1")!])
        let (server, urls) = try startServe([
            "--listen", "127.0.0.1:0", "--listen", "https://127.0.0.1:0", "--tls-cert", leaf.certificatePath, "--tls-key", leaf.keyPath,
            "--zone", try zoneFile().path, "--request-timeout", "1", "--handshake-timeout", "3", "--idle-timeout", "5",
        ], listeners: 2)
        defer { assertStopsCleanly(server) }
        let plain = try port(of: urls[0]), tls = try port(of: urls[1])
        let started = ContinuousClock.now
        let slowloris = try RawHTTPClient(port: plain)
        slowloris.send("GET /d?dn=www.example.test HTTP/1.1\r\nHost: t\r\n")
        let keptAlive = try RawHTTPClient(port: plain)
        XCTAssertEqual(Self.ask(keptAlive).body, "192.0.2.10")
        let answered = ContinuousClock.now
        let silentTLS = try RawHTTPClient(port: tls)
        // HTTP/2 by prior knowledge: the preface and an empty SETTINGS frame, then silence.
        let h2 = try RawHTTPClient(port: plain)
        h2.send("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\u{0}\u{0}\u{0}\u{4}\u{0}\u{0}\u{0}\u{0}\u{0}")
        let h2Started = ContinuousClock.now

        // Read in the order of their deadlines, so each time read is the time of the cut.
        let cut = slowloris.readResponse(timeout: 15)
        let slowlorisAt = ContinuousClock.now - started
        XCTAssertEqual(cut.status, 408, cut.body)
        XCTAssertTrue(keptAlive.readAll(timeout: 15).closed, "an idle keep-alive connection ends at the request timeout")
        let keptAliveAt = ContinuousClock.now - answered
        let tlsEnd = silentTLS.readAll(timeout: 15)
        let tlsAt = ContinuousClock.now - started
        XCTAssertTrue(tlsEnd.closed && tlsEnd.data.isEmpty, "a silent TLS client is closed without a byte")
        let h2End = h2.readAll(timeout: 15)
        let h2At = ContinuousClock.now - h2Started
        XCTAssertTrue(h2End.closed, "an idle HTTP/2 connection ends at the idle timeout")
        XCTAssertFalse(h2End.data.isEmpty, "after the server's SETTINGS and GOAWAY")
        for (name, elapsed, deadline) in [
            ("slowloris 408", slowlorisAt, 1), ("idle keep-alive", keptAliveAt, 1), ("TLS handshake", tlsAt, 3), ("idle HTTP/2", h2At, 5),
        ] {
            XCTAssertGreaterThanOrEqual(elapsed, .seconds(deadline) - .milliseconds(100), "\(name): cut before its deadline")
            XCTAssertLessThan(elapsed, .seconds(deadline) + .milliseconds(1_500), "\(name): cut at \(elapsed), not near its \(deadline) s")
        }
        let metrics = try Self.metrics(port: plain)
        XCTAssertTrue(metrics.contains(#"httpdns_shed_total{reason="deadline"} 1"#), "only the slowloris is shed:\n\(metrics)")
    }

    /// `--max-streams 2`: of five streams at once on one HTTP/2 connection, two wait for the
    /// upstream and three read 503 at once, counted as shed; the two are answered once it answers.
    func testMaxStreamsRefusesStreamsPastTheLimit() throws {
        let (upstream, gate) = try heldUpstream()
        defer {
            gate.open()
            upstream.stop()
        }
        let (server, urls) = try startServe([
            "--listen", "127.0.0.1:0", "--upstream", "dnspod=\(upstream.baseURL.absoluteString)", "--allow-private",
            "--timeout", "30", "--max-streams", "2",
        ])
        defer { assertStopsCleanly(server) }
        let port = try port(of: urls[0])
        let load = try RunningTool(
            executable: URL(fileURLWithPath: "/usr/bin/h2load"), arguments: ["-n", "5", "-c", "1", "-m", "5", urls[0] + "/d?dn=held.example.com"])
        var metrics = ""
        XCTAssertTrue(try pollUntilBlocking(every: .milliseconds(20)) {
            metrics = try Self.metrics(port: port)
            return metrics.contains(#"httpdns_shed_total{reason="streams"} 3"#) && gate.waitingCount >= 1
        }, "three streams refused while two are held at the upstream:\n\(metrics)")
        gate.open()
        XCTAssertEqual(try load.wait(timeout: .seconds(30)), 0)
        let output = String(decoding: load.stdout, as: UTF8.self)
        XCTAssertTrue(output.contains("status codes: 2 2xx, 0 3xx, 0 4xx, 3 5xx"), output)
    }

    // MARK: Helpers

    private func zoneFile() throws -> URL {
        let zone = try temporaryDirectory().appendingPathComponent("zone.json")
        try Data(#"{"www.example.test": {"A": ["192.0.2.10"], "ttl": 60}}"#.utf8).write(to: zone)
        return zone
    }

    /// One DNSPod query for www.example.test on `client`: the status (0 for none) and body.
    private static func ask(_ client: RawHTTPClient) -> (status: Int, body: String) {
        client.send("GET /d?dn=www.example.test HTTP/1.1\r\nHost: t\r\n\r\n")
        let response = client.readResponse(timeout: 10)
        return (response.status, response.body)
    }

    /// `/metrics` on a new connection to 127.0.0.1:`port`.
    private static func metrics(port: Int) throws -> String {
        let client = try RawHTTPClient(port: port)
        client.send("GET /metrics HTTP/1.1\r\nHost: t\r\n\r\n")
        return client.readResponse(timeout: 10).body
    }

    /// The names (`comm`) of the threads of process `pid`.
    private static func threadNames(_ pid: Int32) -> [String] {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
        return tasks.compactMap { try? String(contentsOfFile: "/proc/\(pid)/task/\($0)/comm", encoding: .utf8) }
            .map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
    }
}
