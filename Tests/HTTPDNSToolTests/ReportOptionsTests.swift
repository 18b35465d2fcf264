import Foundation
import HTTPDNSCore
import HTTPDNSProxyTestBed
import HTTPDNSTestSupport
import XCTest

/// `--report URL` on `httpdns fetch` and `httpdns proxy` (issue 22), the built binary against a
/// loopback report endpoint.
final class ReportOptionsTests: ToolTestCase {
    var endpoint: ReportEndpoint!

    override func setUpWithError() throws {
        try super.setUpWithError()
        endpoint = try ReportEndpoint()
        let endpoint = self.endpoint!
        addCleanup { endpoint.stop() }
    }

    func testFetchReportsTheRefusedAddressBeforeItExits() throws {
        let provider = try dnspod(zone: #"{"dead.example.test": {"A": ["127.0.0.1"]}}"#)
        let port = try closedPort()
        let result = try run(["fetch", "--report", endpoint.url().absoluteString, "--report-token", "cli-token"] + provider
            + ["http://dead.example.test:\(port)/secret/path?key=hidden"])
        assertFailure(result)
        // The fetch is over, and so is the process: the report went out before it ended.
        let items = endpoint.reports
        XCTAssertEqual(items.count, 1, "\(items)")
        XCTAssertEqual(items.first?["host"] as? String, "dead.example.test")
        XCTAssertEqual(items.first?["address"] as? String, "127.0.0.1")
        XCTAssertEqual(items.first?["port"] as? Int, port)
        XCTAssertEqual(items.first?["error"] as? String, "connect-refused")
        XCTAssertEqual(endpoint.received.first?.header("Authorization"), "Bearer cli-token")
        let body = String(decoding: endpoint.received.first?.request.body ?? Data(), as: UTF8.self)
        XCTAssertFalse(body.contains("secret") || body.contains("hidden"), body)
    }

    func testFetchSignsForAnAccount() throws {
        let provider = try dnspod(zone: #"{"dead.example.test": {"A": ["127.0.0.1"]}}"#)
        let port = try closedPort()
        let result = try run(["fetch", "--report", endpoint.url().absoluteString, "--report-account", "42", "--report-secret", "s3"]
            + provider + ["http://dead.example.test:\(port)/"])
        assertFailure(result)
        let header = try XCTUnwrap(endpoint.received.first?.header("Authorization"))
        XCTAssertNotNil(
            header.range(of: #"^HTTPDNS-HMAC-SHA256 account=42, expires=\d+, signature=[0-9a-f]{64}$"#, options: .regularExpression), header)
        XCTAssertFalse(header.contains("s3,") || header.hasSuffix("s3"), "the secret is never sent")
    }

    func testProxyReportsAndSendsWhatWaitsWhenStopped() throws {
        let bed = try ProxyTestBed()
        defer { bed.stop() }
        var environment = ProcessInfo.processInfo.environment
        for name in ["http_proxy", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY", "no_proxy", "NO_PROXY"] { environment[name] = nil }
        let daemon = try runner.start(
            ["proxy", "--listen", "127.0.0.1:0", "--report", endpoint.url().absoluteString, "--report-token", "p"] + bed.engineArguments,
            environment: environment)
        let url = try daemon.waitForLine(startingWith: "http://")
        let curl = try ToolRunner(executable: URL(fileURLWithPath: "/usr/bin/curl")).run(
            ["-sS", "--max-time", "20", "--cacert", bed.certificates.caCertificatePath,
             "https://\(ProxyTestBed.failoverHost):\(bed.httpsPort)/"],
            environment: ["https_proxy": url])
        XCTAssertEqual(curl.status, 0, curl.stderrText)
        // Stopped at once, before the report's gathering second is over: the stop sends it.
        daemon.send(SIGTERM)
        XCTAssertEqual(try daemon.wait(timeout: .seconds(20)), 0)
        let items = endpoint.reports
        XCTAssertEqual(items.count, 1, "\(items)")
        XCTAssertEqual(items.first?["host"] as? String, ProxyTestBed.failoverHost)
        XCTAssertEqual(items.first?["address"] as? String, ProxyTestBed.dead.description)
        XCTAssertEqual(items.first?["error"] as? String, "connect-refused")
    }

    func testHelpAndUsageErrors() throws {
        for command in ["fetch", "proxy"] {
            let help = try run([command, "--help"]).stdoutText
            for option in ["--report <url>", "--report-token <token>", "--report-account <id>", "--report-secret <secret>"] {
                XCTAssertTrue(help.contains(option), "\(command) help lacks \(option)")
            }
        }
        let url = endpoint.url().absoluteString
        let cases: [[String]] = [
            ["--report", url],
            ["--report-token", "t"],
            ["--report-account", "a", "--report-secret", "s"],
            ["--report", url, "--report-token", "t", "--report-account", "a", "--report-secret", "s"],
            ["--report", url, "--report-account", "a"],
            ["--report", url, "--report-secret", "s"],
            ["--report", "ftp://127.0.0.1/report", "--report-token", "t"],
            ["--report", "not a url", "--report-token", "t"],
            ["--report", url, "--report-token", "two words"],
            ["--report", url, "--report-account", "a,b", "--report-secret", "s"],
        ]
        for extra in cases {
            assertUsage(try run(["fetch"] + extra + ["http://a.example.test/"]))
            assertUsage(try run(["proxy", "--listen", "127.0.0.1:0"] + extra))
        }
    }
}
