import Foundation
import HTTPDNSCore
import HTTPDNSTestSupport
import HTTPServing
import XCTest

/// The daemons the console and dashboard tests read: `serve` with a view, a checked origin and an
/// admin token, and `stub --metrics` in front of a dnsmasq; each asked a few queries first, so
/// that the counts they show are not all zero.
extension ToolTestCase {
    /// The admin token of ``startConsoleServe(checkPath:)``.
    static var consoleToken: String { "console-test-token-0123456789" }

    /// Starts serve with the view `carrier-a` (every loopback client), `www.example.test` checked by
    /// an `http` probe of `checkPath` on an origin at 127.0.0.2, and ``consoleToken``; asks it
    /// `www.example.test` three times (DNSPod text, counted under `carrier-a`).
    /// - Returns: the process and its base URL.
    func startConsoleServe(checkPath: String = "/health") throws -> (server: RunningTool, base: String) {
        let origin = try HTTPServer(configuration: .init(address: HTTPDNSIPAddress("127.0.0.2")!, port: 0)) { _ in .text("ok") }
        addCleanup { origin.stop() }
        let directory = try temporaryDirectory()
        let check = #"{"type": "http", "port": \#(origin.port), "path": "\#(checkPath)", "interval": 0.2, "fall": 1, "rise": 1}"#
        try Data(#"""
            {"www.example.test": {"A": ["127.0.0.2"], "ttl": 60, "check": \#(check), "views": {"carrier-a": {"A": ["127.0.0.2"]}}}}
            """#.utf8).write(to: directory.appendingPathComponent("zone.json"))
        try Data(#"{"views": [{"name": "carrier-a", "networks": ["127.0.0.0/8"]}]}"#.utf8)
            .write(to: directory.appendingPathComponent("views.json"))
        let (server, urls) = try startServe([
            "--listen", "127.0.0.1:0", "--zone", directory.appendingPathComponent("zone.json").path,
            "--views", directory.appendingPathComponent("views.json").path, "--admin-token", Self.consoleToken,
        ])
        addCleanup { self.assertStopsCleanly(server) }
        let base = urls[0]
        for _ in 0..<3 {
            XCTAssertEqual(try consoleCurl(["\(base)/d?dn=www.example.test"]).body, "127.0.0.2")
        }
        return (server, base)
    }

    /// Starts `stub --metrics 127.0.0.1:0` with a loopback provider and a dnsmasq upstream, and asks
    /// it an A and a TXT question twice each.
    /// - Returns: the process and the metrics listener's base URL.
    func startConsoleStub() throws -> (stub: RunningTool, base: String) {
        let provider = try startService(zone: #"{"www.example.test": {"A": ["127.0.0.2"], "ttl": 60}}"#)
        let upstream = try dnsmasq { $0.txtRecords = [("www.example.test", ["console"])] }
        let stub = try runner.start([
            "stub", "--listen", "127.0.0.1:0", "--provider", "dnspod=\(provider)", "--allow-private", "--upstream", "udp=127.0.0.1:\(upstream.port)", "--timeout", "2",
            "--metrics", "127.0.0.1:0",
        ])
        addCleanup {
            stub.send(SIGTERM)
            _ = try? stub.wait(timeout: .seconds(20))
        }
        let line = try stub.waitForLine(startingWith: "listening on ")
        let port = try XCTUnwrap(line.split(separator: ":").last.flatMap { Int($0) }, line)
        let metrics = try stub.waitForLine(startingWith: "metrics on ")
        let base = String(metrics.dropFirst("metrics on ".count).dropLast("/metrics".count))
        let dig = "/usr/bin/dig"
        guard FileManager.default.isExecutableFile(atPath: dig) else {
            throw ToolRunner.Failure("\(dig) not found: install the Debian package bind9-dnsutils (scripts/ensure-deps.sh)")
        }
        // A through HTTPDNS, TXT through the upstream; each twice, the second from a cache.
        for question in [["www.example.test"], ["www.example.test"], ["-t", "TXT", "www.example.test"], ["-t", "TXT", "www.example.test"]] {
            _ = try ToolRunner(executable: URL(fileURLWithPath: dig))
                .run(["@127.0.0.1", "-p", "\(port)", "+time=3", "+tries=1", "+short"] + question, timeout: .seconds(30))
        }
        return (stub, base)
    }

    /// `curl -sS` with `arguments` (never through a proxy): the body and the HTTP status.
    func consoleCurl(_ arguments: [String]) throws -> (body: String, code: Int) {
        let result = try ToolRunner(executable: URL(fileURLWithPath: "/usr/bin/curl"))
            .run(["-sS", "--max-time", "10", "--noproxy", "*", "-w", "\n%{http_code}"] + arguments, timeout: .seconds(30))
        let text = result.stdoutText
        let end = text.lastIndex(of: "\n") ?? text.endIndex
        return (String(text[..<end]), Int(text[text.index(after: end)...]) ?? 0)
    }
}
