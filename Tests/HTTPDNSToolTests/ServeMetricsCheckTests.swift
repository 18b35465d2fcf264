import Foundation
import HTTPDNSCore
import HTTPDNSServer
import HTTPDNSTestSupport
import HTTPServing
import XCTest

/// `/metrics` of a live `httpdns serve` read by an independent parser: scripts/check-metrics.py,
/// with prometheus_client (Debian's python3-prometheus-client), not the suite's own parser. The
/// zone has a check, a views file and a report token are given, so the health, views and report
/// families are there to be read too.
final class ServeMetricsCheckTests: ToolTestCase {
    private static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    private let token = "metrics-report-token"

    /// Runs scripts/check-metrics.py with Debian's Python (the one python3-prometheus-client is for).
    private func checkMetrics(_ arguments: [String]) throws -> (status: Int32, output: String, errors: String) {
        let script = Self.root.appendingPathComponent("scripts/check-metrics.py").path
        let tool = try RunningTool(executable: URL(fileURLWithPath: "/usr/bin/python3"), arguments: [script] + arguments)
        let status = try tool.wait(timeout: .seconds(60))
        return (status, String(decoding: tool.stdout, as: UTF8.self), String(decoding: tool.stderr, as: UTF8.self))
    }

    private func curl(_ arguments: [String]) throws -> String {
        let curl = try RunningTool(
            executable: URL(fileURLWithPath: "/usr/bin/curl"), arguments: ["-sS", "--max-time", "10", "--noproxy", "*"] + arguments)
        XCTAssertEqual(try curl.wait(timeout: .seconds(30)), 0, String(decoding: curl.stderr, as: UTF8.self))
        return String(decoding: curl.stdout, as: UTF8.self)
    }

    func testMetricsOfALiveServerPassTheReferenceParser() throws {
        // 127.0.0.2 answers the check's port, 127.0.0.3 refuses it.
        let origin = try HTTPServer(configuration: .init(address: HTTPDNSIPAddress("127.0.0.2")!, port: 0)) { _ in .text("ok") }
        defer { origin.stop() }
        let directory = try temporaryDirectory()
        let check = #"{"type": "tcp", "port": \#(origin.port), "interval": 0.1, "fall": 1, "rise": 1}"#
        try Data("""
            {"www.example.test": {"A": ["127.0.0.2", "127.0.0.3"], "ttl": 60, "check": \(check),
             "views": {"carrier-a": {"A": ["127.0.0.2"]}}}}
            """.utf8).write(to: directory.appendingPathComponent("zone.json"))
        try Data(#"{"views": [{"name": "carrier-a", "networks": ["10.1.0.0/16"]}]}"#.utf8)
            .write(to: directory.appendingPathComponent("views.json"))
        let server = try runner.start([
            "serve", "--listen", "127.0.0.1:0", "--zone", directory.appendingPathComponent("zone.json").path,
            "--views", directory.appendingPathComponent("views.json").path, "--report-token", token,
        ])
        defer { assertStopsCleanly(server) }
        let base = String(try server.waitForLine(startingWith: "listening on ").dropFirst("listening on ".count))
        let up = "httpdns_origin_up{address=\"127.0.0.2\",check=\"tcp:\(origin.port)\"} 1"
        let down = "httpdns_origin_up{address=\"127.0.0.3\",check=\"tcp:\(origin.port)\"} 0"
        XCTAssertTrue(
            try pollUntilBlocking(within: .seconds(20), every: .milliseconds(50)) {
                let metrics = try curl(["\(base)/metrics"])
                return metrics.contains(up) && metrics.contains(down)
            }, "the checks never settled")

        // Traffic for every family group: a query in the view and one outside it, a report taken
        // and one refused.
        XCTAssertEqual(try curl(["\(base)/d?dn=www.example.test&ip=10.1.0.9"]), "127.0.0.2")
        XCTAssertEqual(try curl(["\(base)/d?dn=www.example.test&ip=192.0.2.77"]), "127.0.0.2")
        let report = #"{"reports":[{"host":"www.example.test","address":"127.0.0.2","port":443,"error":"connect-refused","time":1796300000}]}"#
        let post = ["-X", "POST", "-H", "Content-Type: application/json", "--data-binary", report, "\(base)/report"]
        XCTAssertEqual(try curl(["-H", "Authorization: Bearer \(token)"] + post), #"{"accepted":1}"#)
        XCTAssertEqual(try curl(post), "missing credential\n")

        let checked = try checkMetrics([
            "\(base)/metrics", "--require", "health,views,reports",
            "--expect", #"httpdns_queries_total{endpoint="dnspod"}=2"#,
            "--expect", #"httpdns_view_queries_total{view="carrier-a"}=1"#,
            "--expect", #"httpdns_origin_up{address="127.0.0.2",check="tcp:\#(origin.port)"}=1"#,
            "--expect", #"httpdns_origin_up{address="127.0.0.3",check="tcp:\#(origin.port)"}=0"#,
            "--expect", #"httpdns_reports_total{result="accepted"}=1"#,
            "--expect", #"httpdns_reports_total{result="unauthorized"}=1"#,
            "--expect", #"httpdns_report_items_total{result="recorded"}=1"#,
            "--expect", #"httpdns_zone_loads_total{result="ok"}=1"#,
        ])
        XCTAssertEqual(checked.status, 0, checked.errors)
        XCTAssertTrue(checked.output.contains(", OK"), checked.output)

        // The checker can fail: the same text with one family's TYPE line removed is refused.
        let text = try curl(["\(base)/metrics"])
        let broken = directory.appendingPathComponent("broken.txt")
        try Data(text.split(separator: "\n", omittingEmptySubsequences: false)
            .filter { $0 != "# TYPE httpdns_view_queries_total counter" }.joined(separator: "\n").utf8).write(to: broken)
        let refused = try checkMetrics([broken.path, "--require", "views"])
        XCTAssertEqual(refused.status, 1, refused.output)
        XCTAssertTrue(refused.errors.contains("httpdns_view_queries_total: no TYPE line"), refused.errors)
    }
}
