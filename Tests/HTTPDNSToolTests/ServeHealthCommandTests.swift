import Foundation
import HTTPDNSCore
import HTTPDNSServer
import HTTPDNSTestSupport
import HTTPServing
import XCTest

/// `httpdns serve` with checked origins: a dead address leaves the answers, `/status` answers the
/// admin token only, SIGHUP keeps or drops checks, and bad health options are usage errors.
final class ServeHealthCommandTests: ToolTestCase {
    private let token = "serve-health-token-0123456789"

    private func curl(_ arguments: [String]) throws -> (output: String, code: String) {
        let curl = try RunningTool(
            executable: URL(fileURLWithPath: "/usr/bin/curl"),
            arguments: ["-sS", "--max-time", "10", "--noproxy", "*", "-w", "\n%{http_code}"] + arguments)
        _ = try curl.wait(timeout: .seconds(30))
        let text = String(decoding: curl.stdout, as: UTF8.self)
        let end = text.lastIndex(of: "\n") ?? text.endIndex
        return (String(text[..<end]), String(text[text.index(after: end)...]))
    }

    private func waitUntil(_ condition: () throws -> Bool) throws {
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline {
            if try condition() { return }
            usleep(50_000)
        }
        XCTFail("condition not met within 20 s")
    }

    func testADeadOriginLeavesTheAnswersAndStatusNeedsTheToken() throws {
        let origin = try HTTPServer(configuration: .init(address: HTTPDNSIPAddress("127.0.0.2")!, port: 0)) { _ in .text("ok") }
        defer { origin.stop() }
        let check = #"{"type": "tcp", "port": \#(origin.port), "interval": 0.1, "fall": 1, "rise": 1}"#
        let directory = try temporaryDirectory()
        let zone = directory.appendingPathComponent("zone.json")
        // 127.0.0.3 has nothing on the port: refused.
        try Data(#"{"www.example.test": {"A": ["127.0.0.2", "127.0.0.3"], "ttl": 60, "check": \#(check)}}"#.utf8).write(to: zone)
        let server = try runner.start(["serve", "--listen", "127.0.0.1:0", "--zone", zone.path, "--admin-token", token, "--max-probes", "4"])
        defer { assertStopsCleanly(server) }
        let line = try server.waitForLine(startingWith: "listening on ")
        let base = String(line.dropFirst("listening on ".count))
        try waitUntil { try self.curl(["\(base)/d?dn=www.example.test"]).output == "127.0.0.2" }

        XCTAssertEqual(try curl(["\(base)/status"]).code, "401")
        XCTAssertEqual(try curl(["-H", "Authorization: Bearer nope", "\(base)/status"]).code, "403")
        let status = try curl(["-H", "Authorization: Bearer \(token)", "\(base)/status"])
        XCTAssertEqual(status.code, "200")
        let health = try XCTUnwrap(try jsonObject(status.output)["health"] as? [String: Any])
        let origins = try XCTUnwrap(health["origins"] as? [[String: Any]])
        XCTAssertEqual(origins.map { $0["state"] as? String }, ["up", "down"])
        XCTAssertEqual(health["maxProbesInFlight"] as? Int, 4)
        let metrics = try curl(["\(base)/metrics"]).output
        XCTAssertTrue(metrics.contains("httpdns_origin_up{address=\"127.0.0.3\",check=\"tcp:\(origin.port)\"} 0"), metrics)

        // SIGHUP without the check: both addresses again.
        try Data(#"{"www.example.test": {"A": ["127.0.0.2", "127.0.0.3"], "ttl": 60}}"#.utf8).write(to: zone)
        server.send(SIGHUP)
        try waitUntil { try self.curl(["\(base)/d?dn=www.example.test"]).output == "127.0.0.2;127.0.0.3" }
    }

    func testBadHealthOptionsAreUsageErrors() throws {
        assertUsage(try run(["serve", "--admin-token", "short"]))
        assertUsage(try run(["serve", "--max-probes", "0"]))
        assertUsage(try run(["serve", "--health-ca", "/nonexistent/ca.pem"]))
        let help = try run(["serve", "--help"])
        for expected in ["--health-ca", "--admin-token", "--max-probes", "Default 64.", "/status"] {
            XCTAssertTrue(help.stdoutText.contains(expected), "help lacks '\(expected)'")
        }
    }
}
