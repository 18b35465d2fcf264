import Foundation
import HTTPDNSTestSupport
import XCTest

/// Issue 33: a config file may say why each value is there in `//` line comments, as the shipped
/// example (contrib/httpdns/serve.json.example) does; `//` inside a string (a URL) is kept, and
/// anything else that is not JSON is still refused.
final class ConfigFileCommentsTests: ToolTestCase {
    private static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    func testLineCommentsAreIgnoredAndSlashesInStringsKept() throws {
        let provider = try startService(zone: #"{"www.example.test": {"A": ["127.0.0.2"], "ttl": 60}}"#)
        let directory = try temporaryDirectory()
        let config = directory.appendingPathComponent("config.json")
        try Data("""
            // The test's own provider: its URL holds "//", which is no comment.
            {
              "providers": ["dnspod=\(provider)"], // a comment after a value
              // "providers": ["dnspod=http://192.0.2.1"],
              "allowPrivate": true, "httpdnsOnly": true
            }
            // The end.
            """.utf8).write(to: config)
        let result = try run(["resolve", "--config", config.path, "--json", "www.example.test"])
        XCTAssertEqual(result.status, 0, result.stderrText)
        let answer = try jsonObject(try XCTUnwrap(result.stdoutLines.first))
        XCTAssertEqual(answer["addresses"] as? [String], ["127.0.0.2"])
        XCTAssertEqual(answer["source"] as? String, "dnspod \(provider)")

        try Data("{/* not JSON */ \"httpdnsOnly\": true}".utf8).write(to: config)
        let refused = try run(["resolve", "--config", config.path, "www.example.test"])
        assertUsage(refused)
        XCTAssertTrue(refused.stderrText.contains("not valid JSON"), refused.stderrText)
    }

    /// The commented example loads as it ships: serve starts from it (its zone and listener given
    /// on the command line, which win) and stops cleanly.
    func testTheShippedExampleConfigurationLoads() throws {
        let directory = try temporaryDirectory()
        let zone = directory.appendingPathComponent("zone.json")
        try Data(#"{"www.example.test": {"A": ["192.0.2.1"], "ttl": 60}}"#.utf8).write(to: zone)
        let example = Self.root.appendingPathComponent("contrib/httpdns/serve.json.example")
        let (server, urls) = try startServe(["--config", example.path, "--zone", zone.path, "--listen", "127.0.0.1:0"])
        XCTAssertEqual(urls.count, 1)
        assertStopsCleanly(server)
    }
}
