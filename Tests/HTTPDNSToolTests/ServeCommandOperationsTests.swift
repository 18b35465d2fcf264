import Foundation
import HTTPDNSCore
import HTTPDNSServer
import HTTPDNSTestSupport
import HTTPServing
import XCTest

/// `httpdns serve` as an operator runs it: several listeners, /health and /ready, SIGHUP reload, errors that
/// name their cause, every default in --help, and SIGTERM under load.
final class ServeCommandOperationsTests: ToolTestCase {
    /// The `listening on` URLs, once `count` of them are printed.
    private func listening(_ server: RunningTool, count: Int) throws -> [String] {
        _ = try server.waitForLine(startingWith: "listening on ")
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline {
            let lines = String(decoding: server.stdout, as: UTF8.self).split(separator: "\n")
                .filter { $0.hasPrefix("listening on ") }.map { String($0.dropFirst("listening on ".count)) }
            if lines.count >= count { return lines }
            usleep(20_000)
        }
        throw ToolRunner.Failure("fewer than \(count) listeners printed")
    }

    private func curl(_ arguments: [String]) throws -> (status: Int32, output: String, errors: String) {
        let curl = try RunningTool(
            executable: URL(fileURLWithPath: "/usr/bin/curl"), arguments: ["-sS", "--max-time", "10", "--noproxy", "*"] + arguments)
        let status = try curl.wait(timeout: .seconds(30))
        return (status, String(decoding: curl.stdout, as: UTF8.self), String(decoding: curl.stderr, as: UTF8.self))
    }

    func testHelpStatesEveryDefault() throws {
        let help = try run(["serve", "--help"])
        XCTAssertEqual(help.status, 0)
        for expected in [
            "Default 127.0.0.1:8053", "Default 10000", "Default 1000.", "request-timeout", "Default 10.", "Default 30.",
            "Default 100.", "Default 5.", "SO_REUSEPORT", "https://", "SIGHUP", "/health", "/ready",
        ] {
            XCTAssertTrue(help.stdoutText.contains(expected), "help lacks '\(expected)':\n\(help.stdoutText)")
        }
        let flat = help.stdoutText.split(whereSeparator: \.isWhitespace).joined(separator: " ")
        XCTAssertTrue(flat.contains("network work (\(max(1, HTTPDNSProcessors.usable - 1)) here)"), flat)
        // Every option but --help states its default.
        let options = help.stdoutText.components(separatedBy: "OPTIONS:")[1].components(separatedBy: "\n\n")[0]
        var blocks: [String] = []
        for line in options.split(separator: "\n") {
            if line.hasPrefix("  -") { blocks.append(String(line)) } else if !blocks.isEmpty { blocks[blocks.count - 1] += " " + line }
        }
        XCTAssertGreaterThan(blocks.count, 20)
        for block in blocks where !block.contains("--help") {
            XCTAssertTrue(block.contains("Default"), "no default stated: \(block)")
        }
        assertUsage(try run(["serve", "--listen", "ftp://127.0.0.1:1"]))
        assertUsage(try run(["serve", "--listen", "https://127.0.0.1:0"]))  // HTTPS without a certificate
        assertUsage(try run(["serve", "--max-connections", "0"]))
        assertUsage(try run(["serve", "--request-timeout", "soon"]))
        assertUsage(try run(["serve", "--threads", "0"]))
        assertUsage(try run(["serve", "--threads", "257"]))
        assertUsage(try run(["serve", "--max-streams", "101"]))  // h2o advertises 100 concurrent streams
    }

    /// The default loop count leaves one CPU to the rest, and never falls below one loop.
    func testThreadsDefaultLeavesOneCPU() {
        XCTAssertEqual([1, 2, 3, 4, 16].map(HTTPDNSService.Connections.loops(forCPUs:)), [1, 1, 2, 3, 15])
        XCTAssertEqual(HTTPDNSService.Connections().threads, max(1, HTTPDNSProcessors.usable - 1))
    }

    /// The default loop count follows the affinity mask: under `taskset -c 0` (one CPU) it is one.
    func testThreadsDefaultFollowsTheAffinityMask() throws {
        let tool = try RunningTool(
            executable: URL(fileURLWithPath: "/usr/bin/taskset"), arguments: ["-c", "0", runner.executable.path, "serve", "--help"])
        XCTAssertEqual(try tool.wait(timeout: .seconds(30)), 0, String(decoding: tool.stderr, as: UTF8.self))
        let help = String(decoding: tool.stdout, as: UTF8.self).split(whereSeparator: \.isWhitespace).joined(separator: " ")
        XCTAssertTrue(help.contains("network work (1 here)"), help)
    }

    func testPlainAndHTTPSListenersHealthAndSIGHUPReload() throws {
        let directory = try temporaryDirectory()
        let certificates = try TestCertificates()
        defer { certificates.remove() }
        let leaf = try certificates.issue(dnsNames: ["localhost"], ipAddresses: [HTTPDNSIPAddress("127.0.0.1")!])
        let zone = directory.appendingPathComponent("zone.json")
        try Data(#"{"www.example.test": {"A": ["192.0.2.10"], "ttl": 60}}"#.utf8).write(to: zone)
        let server = try runner.start([
            "serve", "--listen", "127.0.0.1:0", "--listen", "https://127.0.0.1:0", "--tls-cert", leaf.certificatePath,
            "--tls-key", leaf.keyPath, "--zone", zone.path,
        ])
        defer { assertStopsCleanly(server) }
        let urls = try listening(server, count: 2)
        XCTAssertTrue(urls[0].hasPrefix("http://127.0.0.1:"), "\(urls)")
        XCTAssertTrue(urls[1].hasPrefix("https://127.0.0.1:"), "\(urls)")
        let trust = ["--cacert", certificates.caCertificatePath]
        XCTAssertEqual(try curl(["\(urls[0])/health"]).output, "alive\n")
        XCTAssertEqual(try curl(["\(urls[0])/ready"]).output, "ready\n")
        XCTAssertEqual(try curl(trust + ["--http2", "\(urls[1])/ready"]).output, "ready\n")
        XCTAssertEqual(try curl(trust + ["\(urls[1])/d?dn=www.example.test"]).output, "192.0.2.10")

        // A new zone replaces the old at once.
        try Data(#"{"www.example.test": {"A": ["192.0.2.11"], "ttl": 60}, "new.example.test": {"A": ["192.0.2.12"]}}"#.utf8)
            .write(to: zone)
        server.send(SIGHUP)
        try waitUntil { try self.curl(["\(urls[0])/d?dn=new.example.test"]).output == "192.0.2.12" }
        XCTAssertEqual(try curl(["\(urls[0])/d?dn=www.example.test"]).output, "192.0.2.11")
        // A bad one is refused, says why, and the service goes on with the last good zone.
        try Data(#"{"www.example.test": {"A": ["not an address"]}}"#.utf8).write(to: zone)
        server.send(SIGHUP)
        try waitUntil { String(decoding: server.stderr, as: UTF8.self).contains("keeping the old zone") }
        XCTAssertTrue(String(decoding: server.stderr, as: UTF8.self).contains(zone.path))
        XCTAssertEqual(try curl(["\(urls[0])/d?dn=new.example.test"]).output, "192.0.2.12")
        XCTAssertTrue(server.isRunning, "SIGHUP must not end the server")
    }

    func testErrorsNameTheRealCause() throws {
        let certificates = try TestCertificates()
        defer { certificates.remove() }
        let first = try certificates.issue(dnsNames: ["a.test"])
        let second = try certificates.issue(dnsNames: ["b.test"])
        let mismatch = try run(["serve", "--listen", "127.0.0.1:0", "--tls-cert", first.certificatePath, "--tls-key", second.keyPath])
        XCTAssertEqual(mismatch.status, 1)
        XCTAssertTrue(mismatch.stderrText.contains("the TLS private key does not match the certificate"), mismatch.stderrText)

        let busy = try HTTPServer { _ in .text("busy") }
        defer { busy.stop() }
        let taken = try run(["serve", "--listen", "127.0.0.1:\(busy.port)"])
        XCTAssertEqual(taken.status, 1)
        XCTAssertTrue(
            taken.stderrText.contains("cannot listen on 127.0.0.1:\(busy.port): Address already in use (EADDRINUSE)"), taken.stderrText)
    }

    func testTwoInstancesShareAPortWithReusePort() throws {
        let directory = try temporaryDirectory()
        let zone = directory.appendingPathComponent("zone.json")
        try Data(#"{"www.example.test": {"A": ["192.0.2.10"], "ttl": 60}}"#.utf8).write(to: zone)
        let first = try runner.start(["serve", "--listen", "127.0.0.1:0", "--reuse-port", "--zone", zone.path])
        defer { assertStopsCleanly(first) }
        let url = try listening(first, count: 1)[0]
        let port = try XCTUnwrap(url.split(separator: ":").last.map(String.init))
        let second = try runner.start(["serve", "--listen", "127.0.0.1:\(port)", "--reuse-port", "--zone", zone.path])
        defer { assertStopsCleanly(second) }
        XCTAssertEqual(try listening(second, count: 1), [url])
        // Either instance answers; with the first gone the second still does.
        XCTAssertEqual(try curl(["\(url)/d?dn=www.example.test"]).output, "192.0.2.10")
        first.send(SIGTERM)
        XCTAssertEqual(try first.wait(timeout: .seconds(30)), 0)
        for _ in 0..<5 { XCTAssertEqual(try curl(["\(url)/d?dn=www.example.test"]).output, "192.0.2.10") }
        let without = try run(["serve", "--listen", "127.0.0.1:\(port)", "--zone", zone.path])
        XCTAssertEqual(without.status, 1, "without --reuse-port the port is busy")
    }

    /// Clients past the descriptor limit wait in the listen queue, which keeps the listener
    /// readable: the acceptor pauses instead of spinning on it, and answers again once descriptors
    /// are free.
    func testOutOfDescriptorsPausesAcceptingInsteadOfSpinning() throws {
        let directory = try temporaryDirectory()
        let zone = directory.appendingPathComponent("zone.json")
        try Data(#"{"www.example.test": {"A": ["192.0.2.10"], "ttl": 60}}"#.utf8).write(to: zone)
        let server = try runner.start(["serve", "--listen", "127.0.0.1:0", "--zone", zone.path], descriptorLimit: 64)
        defer { assertStopsCleanly(server) }
        let url = try listening(server, count: 1)[0]
        let port = try XCTUnwrap(url.split(separator: ":").last.flatMap { Int($0) })
        var backlog = try server.cpuWhileBacklogged(port: port)
        XCTAssertLessThan(backlog.spent, 0.3, "serve spent \(backlog.spent) s of CPU in 1.5 s with its listener backlogged and no descriptor free")
        XCTAssertTrue(server.isRunning, String(decoding: server.stderr, as: UTF8.self))

        backlog.idle = []  // closed: the server frees their descriptors and drains the queue
        XCTAssertEqual(try curl(["\(url)/d?dn=www.example.test"]).output, "192.0.2.10")
    }

    /// SIGTERM while requests wait on an upstream held at a gate: the listener closes while the
    /// process is still draining (a new connection is refused then, with the held requests still
    /// unanswered), and once the gate opens every accepted request is answered and serve exits 0.
    func testSIGTERMUnderLoadAnswersEveryAcceptedRequest() throws {
        let (upstream, gate) = try heldUpstream()
        defer {
            gate.open()
            upstream.stop()
        }
        let server = try runner.start([
            "serve", "--listen", "127.0.0.1:0", "--upstream", "dnspod=\(upstream.baseURL.absoluteString)", "--allow-private",
            "--drain-timeout", "25", "--timeout", "25", "--threads", "3",  // the drain reaches every loop
        ])
        let url = try listening(server, count: 1)[0]
        let port = try XCTUnwrap(url.split(separator: ":").last.flatMap { Int($0) })
        let clients = try (0..<16).map { index -> RawHTTPClient in
            let client = try RawHTTPClient(port: port)
            client.send("GET /d?dn=n\(index).example.com HTTP/1.1\r\nHost: t\r\n\r\n")
            return client
        }
        // The engine opens at most 8 connections to one upstream: 8 requests held there means
        // serve has read at least those (the rest wait in the engine or on their sockets).
        try waitUntil { gate.waitingCount >= 8 }
        server.send(SIGTERM)
        var refusal = ""
        try waitUntil {
            do {
                _ = try RawHTTPClient(port: port)
                return false
            } catch {
                refusal = "\(error)"
                return true
            }
        }
        XCTAssertTrue(refusal.contains("Connection refused"), "a new connection during the drain: \(refusal)")
        XCTAssertTrue(server.isRunning, "the refusal must be seen during the drain, not after the exit")
        XCTAssertGreaterThan(gate.waitingCount, 0, "requests are still held at the upstream while connections are refused")
        gate.open()
        for (index, client) in clients.enumerated() {
            let response = client.readResponse(timeout: 30)
            XCTAssertEqual(response.status, 200, "request \(index)")
            XCTAssertEqual(response.body, "93.184.216.34", "request \(index)")
        }
        assertStopsCleanly(server, signalled: true)
    }

    func testMetricsAccessLogAndTheClientBehindATrustedProxy() throws {
        let directory = try temporaryDirectory()
        let zone = directory.appendingPathComponent("zone.json")
        try Data(#"{"www.example.test": {"A": ["192.0.2.10"], "ttl": 60}}"#.utf8).write(to: zone)
        let log = directory.appendingPathComponent("access.log")
        let server = try runner.start([
            "serve", "--listen", "127.0.0.1:0", "--zone", zone.path, "--access-log", log.path, "--trusted-proxy", "127.0.0.1/32",
        ])
        defer { assertStopsCleanly(server) }
        let url = try listening(server, count: 1)[0]
        let port = try XCTUnwrap(url.split(separator: ":").last.flatMap { Int($0) })
        // A PROXY v1 header from the trusted balancer names the client.
        let proxied = try RawHTTPClient(port: port, source: "127.0.0.1")
        proxied.send("PROXY TCP4 203.0.113.9 127.0.0.1 4000 80\r\nGET /d?dn=www.example.test&clientip=1 HTTP/1.1\r\nHost: t\r\n\r\n")
        XCTAssertEqual(proxied.readResponse(timeout: 10).body, "192.0.2.10|203.0.113.9")
        // Without a header, its X-Forwarded-For does.
        let forwarded = try RawHTTPClient(port: port, source: "127.0.0.1")
        forwarded.send("GET /d?dn=www.example.test&clientip=1 HTTP/1.1\r\nHost: t\r\nX-Forwarded-For: 198.51.100.4\r\n\r\n")
        XCTAssertEqual(forwarded.readResponse(timeout: 10).body, "192.0.2.10|198.51.100.4")
        // Anyone else's header is not believed.
        let direct = try RawHTTPClient(port: port, source: "127.0.0.2")
        direct.send("GET /d?dn=www.example.test&clientip=1 HTTP/1.1\r\nHost: t\r\nX-Forwarded-For: 198.51.100.4\r\n\r\n")
        XCTAssertEqual(direct.readResponse(timeout: 10).body, "192.0.2.10|127.0.0.2")

        let metrics = try curl(["\(url)/metrics"]).output
        XCTAssertTrue(metrics.contains("httpdns_queries_total{endpoint=\"dnspod\"} 3"), metrics)
        XCTAssertTrue(metrics.contains("httpdns_cache_total{outcome=\"zone\"} 3"), metrics)
        XCTAssertTrue(metrics.contains("httpdns_open_connections"), metrics)
        try waitUntil { ((try? String(contentsOf: log, encoding: .utf8)) ?? "").split(separator: "\n").count >= 3 }
        let lines = try String(contentsOf: log, encoding: .utf8).split(separator: "\n")
        XCTAssertTrue(lines[0].contains("\"client\":\"203.0.113.9\""), String(lines[0]))
        XCTAssertTrue(lines[0].contains("\"endpoint\":\"dnspod\""), String(lines[0]))
        XCTAssertTrue(lines[0].contains("\"name\":\"www.example.test\""), String(lines[0]))
        for line in lines { XCTAssertNotNil(try? JSONSerialization.jsonObject(with: Data(line.utf8)), String(line)) }
    }

    /// Issue 32: a PROXY header from a peer `--trusted-proxy` does not name is ignored, as its
    /// `X-Forwarded-For` is: the request is answered for the peer, not refused as broken HTTP (a
    /// balancer left out of the list still gets answers). With no trusted proxy at all, too.
    func testAPROXYHeaderFromAnUntrustedPeerIsIgnoredAndTheRequestAnsweredByThePeer() throws {
        let directory = try temporaryDirectory()
        let zone = directory.appendingPathComponent("zone.json")
        try Data(#"{"www.example.test": {"A": ["192.0.2.10"], "ttl": 60}}"#.utf8).write(to: zone)
        let request = "GET /d?dn=www.example.test&clientip=1 HTTP/1.1\r\nHost: t\r\n\r\n"
        // v2: PROXY, TCP over IPv4, 203.0.113.9:4000 -> 127.0.0.1:80.
        let v2: [UInt8] = [0x0d, 0x0a, 0x0d, 0x0a, 0x00, 0x0d, 0x0a, 0x51, 0x55, 0x49, 0x54, 0x0a, 0x21, 0x11, 0x00, 12,
                           203, 0, 113, 9, 127, 0, 0, 1, 0x0f, 0xa0, 0x00, 80]
        for trusted in [["--trusted-proxy", "127.0.0.1/32"], []] {
            let server = try runner.start(["serve", "--listen", "127.0.0.1:0", "--zone", zone.path] + trusted)
            defer { assertStopsCleanly(server) }
            let url = try listening(server, count: 1)[0]
            let port = try XCTUnwrap(url.split(separator: ":").last.flatMap { Int($0) })
            let v1Client = try RawHTTPClient(port: port, source: "127.0.0.2")
            v1Client.send("PROXY TCP4 203.0.113.9 127.0.0.1 4000 80\r\n" + request)
            let v1Answer = v1Client.readResponse(timeout: 10)
            XCTAssertEqual(v1Answer.status, 200, "v1 from an untrusted peer (\(trusted))")
            XCTAssertEqual(v1Answer.body, "192.0.2.10|127.0.0.2", "answered by the peer (\(trusted))")
            let v2Client = try RawHTTPClient(port: port, source: "127.0.0.2")
            v2Client.send(bytes: v2 + Array(request.utf8))
            let v2Answer = v2Client.readResponse(timeout: 10)
            XCTAssertEqual(v2Answer.status, 200, "v2 from an untrusted peer (\(trusted))")
            XCTAssertEqual(v2Answer.body, "192.0.2.10|127.0.0.2", "answered by the peer (\(trusted))")
            // A request without a header from the same peer is unchanged.
            let plain = try RawHTTPClient(port: port, source: "127.0.0.2")
            plain.send(request)
            XCTAssertEqual(plain.readResponse(timeout: 10).body, "192.0.2.10|127.0.0.2")
            if !trusted.isEmpty {
                // The trusted balancer's header is still believed.
                let balancer = try RawHTTPClient(port: port, source: "127.0.0.1")
                balancer.send(bytes: v2 + Array(request.utf8))
                XCTAssertEqual(balancer.readResponse(timeout: 10).body, "192.0.2.10|203.0.113.9")
            }
        }
    }

    private func waitUntil(_ condition: () throws -> Bool) throws {
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline {
            if try condition() { return }
            usleep(50_000)
        }
        XCTFail("condition not met within 20 s")
    }
}
