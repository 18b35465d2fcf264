import Foundation
import HTTPDNSTestSupport
import XCTest

/// `make api-check` (scripts/public-api.py --check) fails when a recorded `public` or `open` class is
/// removed, and records each symbol with the product a user imports: run on symbol graphs of our own
/// making, against a record in a temporary directory.
final class PublicAPIRecordTests: XCTestCase {
    private static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    private var directory: URL!

    override func setUpWithError() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("httpdns-api-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    override func tearDown() {
        try? FileManager.default.removeItem(at: directory)
    }

    /// A symbol-graph file for `module` holding `symbols` (access level, name, declaration).
    private func writeGraph(module: String, _ symbols: [(access: String, name: String, declaration: String)]) throws -> URL {
        let graphs = directory.appendingPathComponent("graphs-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: graphs, withIntermediateDirectories: true)
        let entries: [[String: Any]] = symbols.map { symbol in
            [
                "accessLevel": symbol.access,
                "identifier": ["precise": "s:\(module)\(symbol.name)", "interfaceLanguage": "swift"],
                "pathComponents": [symbol.name],
                "declarationFragments": [["kind": "text", "spelling": symbol.declaration]],
            ]
        }
        let graph: [String: Any] = ["symbols": entries, "relationships": []]
        try JSONSerialization.data(withJSONObject: graph).write(to: graphs.appendingPathComponent("\(module).symbols.json"))
        return graphs
    }

    private func script(_ arguments: [String]) throws -> ToolRunner.Result {
        try ToolRunner(executable: URL(fileURLWithPath: "/usr/bin/env")).run(
            ["python3", Self.root.appendingPathComponent("scripts/public-api.py").path] + arguments, timeout: .seconds(60))
    }

    func testRemovingAnOpenOrPublicClassFailsTheCheck() throws {
        let record = directory.appendingPathComponent("public-api.txt").path
        let full = try writeGraph(module: "HTTPDNSURLSession", [
            ("open", "HTTPDNSURLProtocol", "class HTTPDNSURLProtocol"),
            ("public", "HTTPDNSRouteThing", "class HTTPDNSRouteThing"),
        ])
        let written = try script([full.path, "--write", "--record", record])
        XCTAssertEqual(written.status, 0, written.stderrText)
        let lines = try String(contentsOfFile: record, encoding: .utf8).split(separator: "\n")
        XCTAssertTrue(lines.contains("HTTPDNSURLSession  HTTPDNSURLSession  HTTPDNSURLProtocol  open class HTTPDNSURLProtocol"), "\(lines)")
        XCTAssertEqual(try script([full.path, "--check", "--record", record]).status, 0, "an unchanged API passes")

        for (kept, removed) in [("HTTPDNSRouteThing", "HTTPDNSURLProtocol"), ("HTTPDNSURLProtocol", "HTTPDNSRouteThing")] {
            let declaration = "class \(kept)"
            let smaller = try writeGraph(module: "HTTPDNSURLSession", [(kept == "HTTPDNSURLProtocol" ? "open" : "public", kept, declaration)])
            let checked = try script([smaller.path, "--check", "--record", record])
            XCTAssertEqual(checked.status, 1, "removing \(removed) must fail the check: \(checked.stdoutText)")
            XCTAssertTrue(checked.stdoutText.contains("- HTTPDNSURLSession  HTTPDNSURLSession  \(removed)"), checked.stdoutText)
        }
    }

    func testCoreValueTypesAreRecordedUnderTheProductThatBringsThem() throws {
        let record = directory.appendingPathComponent("public-api.txt").path
        let graphs = try writeGraph(module: "HTTPDNSCore", [("public", "HTTPDNSIPAddress", "struct HTTPDNSIPAddress")])
        XCTAssertEqual(try script([graphs.path, "--write", "--record", record]).status, 0)
        let text = try String(contentsOfFile: record, encoding: .utf8)
        XCTAssertEqual(text, "HTTPDNS  HTTPDNSCore  HTTPDNSIPAddress  struct HTTPDNSIPAddress\n")
    }
}
