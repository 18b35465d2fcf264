#if canImport(Glibc)
import Glibc
#endif
import Foundation
import HTTPDNSCore
import HTTPDNSTestSupport
import XCTest

/// `httpdns stub --check` (the built binary against a directory tree standing for the host's
/// /etc and /run) and `--rate-limit` (raw UDP and TCP queries from loopback, and /metrics).
final class StubCheckCommandTests: ToolTestCase {
    /// Writes `files` (path under the root: text) and runs `httpdns stub --check` against them.
    func check(_ files: [String: String], listen: String, link: String? = nil) throws -> ToolRunner.Result {
        let root = try temporaryDirectory()
        for (path, text) in files {
            let url = root.appendingPathComponent(String(path.dropFirst()))
            try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try Data(text.utf8).write(to: url)
        }
        if let link {
            try FileManager.default.createDirectory(at: root.appendingPathComponent("etc"), withIntermediateDirectories: true)
            try FileManager.default.createSymbolicLink(atPath: root.appendingPathComponent("etc/resolv.conf").path, withDestinationPath: link)
        }
        var environment = ProcessInfo.processInfo.environment
        environment["HTTPDNS_STUB_CHECK_ROOT"] = root.path
        return try runner.run(["stub", "--check", "--listen", listen], timeout: .seconds(30), environment: environment)
    }

    func testCheckBehindSystemdResolved() throws {
        let server = try SlowTXTUpstream(delay: .zero)
        defer { server.stop() }
        let stubConf = "/etc/systemd/resolved.conf.d/httpdns-stub.conf"
        var files = [
            "/run/systemd/resolve/stub-resolv.conf": "nameserver 127.0.0.53\noptions edns0 trust-ad\nsearch .\n",
            "/run/systemd/resolve/resolv.conf": "nameserver 127.0.0.1\n",
            "/etc/systemd/resolved.conf": "[Resolve]\n#DNS=\n",
            stubConf: "[Resolve]\nDNS=127.0.0.1:\(server.port)\nDomains=~.\n",
            "/etc/systemd/resolved.conf.d/README": "DNS=9.9.9.9\n",
        ]
        let protected = try check(files, listen: "127.0.0.1:\(server.port)", link: "../run/systemd/resolve/stub-resolv.conf")
        XCTAssertEqual(protected.status, 0, protected.stdoutText + protected.stderrText)
        XCTAssertEqual(protected.stdoutLines, [
            "resolv.conf: nameserver 127.0.0.53:53; a link to ../run/systemd/resolve/stub-resolv.conf (systemd-resolved's stub file)",
            "resolv.conf: search .; options edns0 trust-ad",
            "systemd-resolved: DNS=127.0.0.1:\(server.port) Domains=~. FallbackDNS=(built-in) DNSStubListener=yes",
            "systemd-resolved: servers in use (/run/systemd/resolve/resolv.conf): 127.0.0.1",
            "httpdns stub: 127.0.0.1:\(server.port) answers",
            "protected: every name goes to httpdns stub at 127.0.0.1:\(server.port) through systemd-resolved (Domains=~.); names under a link's own domains (resolvectl domain) still go to that link's DNS",
        ])
        XCTAssertGreaterThanOrEqual(server.received, 1, "the probe reached the server")

        files[stubConf] = "[Resolve]\nDNS=127.0.0.1:\(server.port)\n"
        let partly = try check(files, listen: "127.0.0.1:\(server.port)", link: "../run/systemd/resolve/stub-resolv.conf")
        XCTAssertEqual(partly.status, 1)
        XCTAssertTrue(partly.stdoutLines.last?.hasPrefix("partly protected: ") == true, partly.stdoutText)
    }

    func testCheckInPlaceOfSystemdResolvedAndLeaks() throws {
        // A socket that never answers: the probe says so within its second.
        let closed = try RawSocket(datagram: true)
        let port = try closed.bindLoopback()
        // resolv.conf names port 53 only: a DNS server of the test's own on 127.0.0.155:53 (root, as CI runs).
        let server = try SlowTXTUpstream(delay: .zero, address: (0x7F00_009B, 53))
        defer { server.stop() }
        let direct = try check(["/etc/resolv.conf": "nameserver 127.0.0.155\n"], listen: "127.0.0.155:53")
        XCTAssertEqual(direct.stdoutLines.last, "protected: every name goes to httpdns stub at 127.0.0.155:53", direct.stdoutText)
        XCTAssertEqual(direct.status, 0)

        let leak = try check(["/etc/resolv.conf": "nameserver 127.0.0.153\nnameserver 192.0.2.1\n"], listen: "127.0.0.1:\(port)")
        XCTAssertEqual(leak.status, 1)
        XCTAssertTrue(leak.stdoutLines.contains("httpdns stub: 127.0.0.1:\(port) does not answer (no reply within 1 s)"), leak.stdoutText)
        XCTAssertEqual(leak.stdoutLines.last, "NOT protected: resolv.conf sends names to 127.0.0.153:53, 192.0.2.1:53 (not the stub)")

        let missing = try check([:], listen: "127.0.0.1:\(port)")
        XCTAssertEqual(missing.status, 1)
        XCTAssertEqual(missing.stdoutLines.first, "resolv.conf: nameserver missing (no nameserver line: glibc asks 127.0.0.1:53)")
    }

    /// Issue 32: resolv.conf names the stub's address and nothing listens there. Every lookup on
    /// the host fails: its own verdict and exit status 2, never "protected" and 0; and a closed port
    /// is told from a silent one.
    func testCheckOfADeadStubIsNotAnsweringWithItsOwnStatus() throws {
        let dead = try check(["/etc/resolv.conf": "nameserver 127.0.0.154\n"], listen: "127.0.0.154:53")
        XCTAssertEqual(dead.status, 2, dead.stdoutText)
        XCTAssertTrue(dead.stdoutLines.contains("httpdns stub: 127.0.0.154:53 does not answer (connection refused: nothing listens there): names would fail, not leak"), dead.stdoutText)
        XCTAssertEqual(dead.stdoutLines.last, "NOT answering: every name goes to httpdns stub at 127.0.0.154:53, and nothing answers there (connection refused: nothing listens there): every lookup on the host fails")

        let silentSocket = try RawSocket(datagram: true)
        _ = try silentSocket.bind(0x7F00_009C, port: 53)
        let silent = try check(["/etc/resolv.conf": "nameserver 127.0.0.156\n"], listen: "127.0.0.156:53")
        XCTAssertEqual(silent.status, 2, silent.stdoutText)
        XCTAssertTrue(silent.stdoutLines.contains("httpdns stub: 127.0.0.156:53 does not answer (no reply within 1 s): names would fail, not leak"), silent.stdoutText)
        XCTAssertTrue(silent.stdoutLines.last?.hasPrefix("NOT answering: ") == true, silent.stdoutText)
    }

    func testRateLimitOverUDPAndTCPIsCounted() throws {
        let upstream = try SlowTXTUpstream(delay: .zero)
        defer { upstream.stop() }
        let base = try startService(zone: #"{"www.example.test": {"A": ["127.0.0.10"], "ttl": 60}}"#)
        let stub = try runner.start([
            "stub", "--listen", "127.0.0.1:0", "--provider", "dnspod=\(base)", "--allow-private",
            "--upstream", "udp=127.0.0.1:\(upstream.port)", "--rate-limit", "5", "--metrics", "127.0.0.1:0",
        ])
        addCleanup {
            stub.send(SIGTERM)
            _ = try? stub.wait(timeout: .seconds(20))
        }
        let line = try stub.waitForLine(startingWith: "listening on ")
        let port = try XCTUnwrap(line.split(separator: ":").last.flatMap { UInt16($0) }, line)
        let metricsLine = try stub.waitForLine(startingWith: "metrics on ")
        let metricsPort = try XCTUnwrap(metricsLine.split(separator: ":").last.flatMap { Int($0.split(separator: "/").first ?? "") }, metricsLine)

        // 40 queries at once from one client allowed 5 a second: the burst answered, the rest
        // dropped but every second one answered empty with TC.
        let udp = try RawSocket(datagram: true)
        for id in 1...40 { try udp.sendDatagram(StubDrainTests.query(id: UInt16(id), "q\(id).example.test"), port: port) }
        var answered = 0, truncated = 0, received = 0
        while let answer = udp.receiveDatagram(within: 2000) {
            received += 1
            if answer[2] & 0x02 != 0 {
                XCTAssertEqual([answer[3] & 0x0F, answer[7]], [0, 0], "TC: NOERROR, no answer records")
                truncated += 1
            } else if answer[7] == 1 {
                answered += 1
            }
        }
        XCTAssertTrue((5...12).contains(answered), "the burst of 5 (and what refilled while sending), got \(answered)")
        XCTAssertGreaterThanOrEqual(truncated, 10, "every second query over the limit slips")
        XCTAssertLessThan(received, 40, "the others are dropped")

        // Over TCP the source is real: REFUSED, not silence.
        let tcp = try RawSocket(datagram: false)
        XCTAssertTrue(tcp.connect(port: port, within: 3000))
        try tcp.sendAll((101...120).flatMap { id -> [UInt8] in
            let query = StubDrainTests.query(id: UInt16(id), "t\(id).example.test")
            return [UInt8(query.count >> 8), UInt8(query.count & 0xFF)] + query
        })
        let answers = tcp.receiveFramed(count: 20, within: 5000)
        XCTAssertEqual(answers.count, 20, "every TCP query answered")
        let refused = answers.filter { $0[3] & 0x0F == 5 }.count
        XCTAssertGreaterThanOrEqual(refused, 10, "at most a refilled burst of 5 (and what refilled meanwhile) resolved")

        let client = try RawHTTPClient(port: metricsPort)
        XCTAssertTrue(client.send("GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"))
        let metrics = client.readResponse(timeout: 5).body
        XCTAssertTrue(metrics.contains("httpdns_stub_queries_total{transport=\"udp\",source=\"ratelimited\"} \(40 - answered)\n"), metrics)
        XCTAssertTrue(metrics.contains("httpdns_stub_queries_total{transport=\"tcp\",source=\"ratelimited\"} \(refused)\n"), metrics)
    }

    func testBadRateLimitIsUsage() throws {
        let result = try run(["stub", "--rate-limit", "-1"])
        XCTAssertEqual(result.status, 64)
        XCTAssertTrue(result.stderrText.contains("bad --rate-limit '-1'"), result.stderrText)
    }
}
