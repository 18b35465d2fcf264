import Foundation
import HTTPDNSTestSupport
import XCTest

/// `httpdns serve --report-token` and the config file's `serve.reportTokens`: the built binary
/// takes a report with the token and refuses one without (asked with the curl command).
final class ServeReportCommandTests: ToolTestCase {
    static let body = #"{"reports":[{"host":"www.example.test","address":"192.0.2.10","port":443,"error":"connect-refused","time":1796300000}]}"#

    func testReportsNeedTheConfiguredTokenFromTheFlagOrTheConfigFile() throws {
        let directory = try temporaryDirectory()
        let zone = directory.appendingPathComponent("zone.json")
        try Data(#"{"www.example.test": {"A": ["192.0.2.10"], "ttl": 60}}"#.utf8).write(to: zone)
        let config = directory.appendingPathComponent("config.json")
        try Data(#"{"serve": {"reportTokens": ["from-file"], "reportThreshold": 2, "reportWindow": 60}}"#.utf8).write(to: config)
        for (arguments, token) in [(["--report-token", "from-flag"], "from-flag"), (["--config", config.path], "from-file")] {
            let server = try runner.start(["serve", "--listen", "127.0.0.1:0", "--zone", zone.path] + arguments)
            defer { assertStopsCleanly(server) }
            let base = String(try server.waitForLine(startingWith: "listening on ").dropFirst("listening on ".count))
            XCTAssertEqual(try post("\(base)/report", token: token), "202 {\"accepted\":1}")
            XCTAssertEqual(try post("\(base)/report", token: token + "x"), "403 wrong token\n")
            XCTAssertEqual(try post("\(base)/report", token: nil), "401 missing credential\n")
        }
        assertUsage(try run(["serve", "--report-token", "has space"]))
        assertUsage(try run(["serve", "--report-threshold", "0"]))
        assertUsage(try run(["serve", "--report-window", "0.5"]))
    }

    /// `curl -X POST` with the body; "STATUS BODY".
    private func post(_ url: String, token: String?) throws -> String {
        var arguments = ["-sS", "--max-time", "10", "--noproxy", "*", "-w", "%{http_code} ", "-o", "-", "-X", "POST",
                         "-H", "Content-Type: application/json", "--data-binary", Self.body, url]
        if let token { arguments += ["-H", "Authorization: Bearer \(token)"] }
        // -w writes after the body: move the status to the front.
        let curl = try RunningTool(executable: URL(fileURLWithPath: "/usr/bin/curl"), arguments: arguments)
        XCTAssertEqual(try curl.wait(timeout: .seconds(30)), 0, String(decoding: curl.stderr, as: UTF8.self))
        let text = String(decoding: curl.stdout, as: UTF8.self)
        guard let space = text.lastIndex(of: " ") else { return text }
        return String(text[text.index(space, offsetBy: -3)..<space]) + " " + String(text[..<text.index(space, offsetBy: -3)])
    }
}
