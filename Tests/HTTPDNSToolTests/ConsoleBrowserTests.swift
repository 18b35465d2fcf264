import Foundation
import HTTPDNSTestSupport
import XCTest

/// Issue 33's operator console in a real browser: Debian's headless Chromium loads serve's and the
/// stub's `/status` as a browser asks for it (`Accept: text/html…`, the admin token as the Basic
/// password), and what the page says is checked against the JSON the same endpoint gives curl. A
/// check path holding `<script>` must show as text and create no script element. Each page is also
/// kept as a screenshot in `.build/test-artifacts/`.
final class ConsoleBrowserTests: ToolTestCase {
    static let script = "<script>alert(1)</script>"
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    func testServeConsoleShowsWhatTheJSONSaysAndScriptAsText() throws {
        let chromium = try Self.chromium()
        let (_, base) = try startConsoleServe(checkPath: "/" + Self.script)
        let json = try statusJSON(base + "/status", headers: ["-H", "Authorization: Bearer \(Self.consoleToken)"])
        let url = base.replacingOccurrences(of: "http://", with: "http://admin:\(Self.consoleToken)@") + "/status"
        let dom = try dumpDOM(chromium, url)

        XCTAssertTrue(dom.contains("<title>httpdns serve</title>"), dom)
        XCTAssertNil(dom.range(of: "<script", options: .caseInsensitive), "the page holds a script element:\n\(dom)")
        let origin = try XCTUnwrap(((json["health"] as? [String: Any])?["origins"] as? [[String: Any]])?.first)
        let check = try XCTUnwrap(origin["check"] as? String)
        XCTAssertTrue(check.hasSuffix(Self.script), check)
        let escaped = check.replacingOccurrences(of: "<", with: "&lt;").replacingOccurrences(of: ">", with: "&gt;")
        XCTAssertTrue(dom.contains("<td data-key=\"check\">\(escaped)</td>"), dom)
        XCTAssertTrue(dom.contains("<td data-key=\"address\">\(try XCTUnwrap(origin["address"] as? String))</td>"), dom)

        // The counts the page shows are the JSON's: reading /status counts as no query.
        let queries = try XCTUnwrap(json["queries"] as? [String: Any])
        let total = try XCTUnwrap(queries["total"] as? Int)
        XCTAssertEqual(total, 3)
        XCTAssertEqual(try number(in: dom, after: "<th>total</th><td data-key=\"total\" class=\"n\">"), total)
        let carrier = try XCTUnwrap((queries["byView"] as? [[String: Any]])?.first { $0["view"] as? String == "carrier-a" })
        XCTAssertEqual(carrier["queries"] as? Int, 3)
        XCTAssertEqual(
            try number(in: dom, after: "<td data-key=\"view\">carrier-a</td><td data-key=\"queries\" class=\"n\">"), carrier["queries"] as? Int)
        let text = try XCTUnwrap((queries["byFormat"] as? [[String: Any]])?.first { $0["format"] as? String == "text" })
        XCTAssertEqual(
            try number(in: dom, after: "<td data-key=\"format\">text</td><td data-key=\"queries\" class=\"n\">"), text["queries"] as? Int)
        for section in ["health", "reports", "zones", "redis", "queries", "shed"] {
            XCTAssertNotNil(json[section], section)
            XCTAssertTrue(dom.contains("<section id=\"\(section)\"><h2>\(section)</h2>"), section)
        }
        try screenshot(chromium, url, name: "console-serve.png", height: 3200)
    }

    func testStubConsoleShowsItsUpstreamsAndCaches() throws {
        let chromium = try Self.chromium()
        let (_, base) = try startConsoleStub()
        let json = try statusJSON(base + "/status", headers: [])
        let dom = try dumpDOM(chromium, base + "/status")

        XCTAssertTrue(dom.contains("<title>httpdns stub</title>"), dom)
        XCTAssertNil(dom.range(of: "<script", options: .caseInsensitive), dom)
        let upstream = try XCTUnwrap((json["upstreams"] as? [[String: Any]])?.first)
        let name = try XCTUnwrap(upstream["upstream"] as? String)
        XCTAssertTrue(name.hasPrefix("udp=127.0.0.1:"), name)
        XCTAssertEqual(upstream["group"] as? String, "default")
        XCTAssertEqual(upstream["kind"] as? String, "udp")
        let answered = try XCTUnwrap(upstream["answered"] as? Int)
        XCTAssertGreaterThan(answered, 0)
        XCTAssertTrue(dom.contains("<td data-key=\"upstream\">\(name)</td>"), dom)
        XCTAssertEqual(try number(in: dom, after: "<td data-key=\"answered\" class=\"n\">"), answered)
        let wire = try XCTUnwrap((json["caches"] as? [String: Any])?["wire"] as? [String: Any])
        XCTAssertEqual(try number(in: dom, after: "<th>entries</th><td data-key=\"entries\" class=\"n\">"), wire["entries"] as? Int)
        XCTAssertEqual(try number(in: dom, after: "<th>hits</th><td data-key=\"hits\" class=\"n\">"), wire["hits"] as? Int)
        let udp = try XCTUnwrap((json["queries"] as? [[String: Any]])?.first { $0["transport"] as? String == "udp" })
        XCTAssertEqual(try number(in: dom, after: "<td data-key=\"transport\">udp</td><td data-key=\"engine\" class=\"n\">"), udp["engine"] as? Int)
        try screenshot(chromium, base + "/status", name: "console-stub.png", height: 900)
    }

    // MARK: - Helpers

    /// Debian's Chromium; a missing one fails the test (scripts/ensure-deps.sh installs it).
    static func chromium() throws -> URL {
        let chromium = URL(fileURLWithPath: "/usr/bin/chromium")
        guard FileManager.default.isExecutableFile(atPath: chromium.path) else {
            throw ToolRunner.Failure("install the Debian package chromium (scripts/ensure-deps.sh lists it)")
        }
        return chromium
    }

    /// The JSON curl gets (its own `Accept: */*`): status 200, one object.
    func statusJSON(_ url: String, headers: [String]) throws -> [String: Any] {
        let (body, code) = try consoleCurl(headers + [url])
        XCTAssertEqual(code, 200, body)
        return try jsonObject(body)
    }

    /// Chromium's arguments: headless, no sandbox (root in CI), a fresh profile, no proxy.
    func browserArguments(_ home: URL) -> [String] {
        ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-dev-shm-usage", "--no-proxy-server",
         "--user-data-dir=\(home.appendingPathComponent("profile").path)"]
    }

    /// The DOM after Chromium loaded `url`. An empty dump (headless Chromium now and then exits 0
    /// having printed nothing on a loaded machine, as the proxy test saw) is retried, a wrong page never.
    func dumpDOM(_ chromium: URL, _ url: String) throws -> String {
        let home = try temporaryDirectory()
        var result = try ToolRunner(executable: chromium).run(
            browserArguments(home) + ["--dump-dom", url], timeout: .seconds(90), environment: ["HOME": home.path, "PATH": "/usr/bin:/bin"])
        for _ in 0..<2 where result.status == 0 && result.stdoutText.isEmpty {
            result = try ToolRunner(executable: chromium).run(
                browserArguments(home) + ["--dump-dom", url], timeout: .seconds(90), environment: ["HOME": home.path, "PATH": "/usr/bin:/bin"])
        }
        XCTAssertEqual(result.status, 0, result.stderrText)
        return result.stdoutText
    }

    /// A PNG of the page, 1280 pixels wide and `height` high, in `.build/test-artifacts/name`, kept after the test.
    func screenshot(_ chromium: URL, _ url: String, name: String, height: Int) throws {
        let directory = Self.root.appendingPathComponent(".build/test-artifacts")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let file = directory.appendingPathComponent(name)
        try? FileManager.default.removeItem(at: file)
        let home = try temporaryDirectory()
        let result = try ToolRunner(executable: chromium).run(
            browserArguments(home) + ["--hide-scrollbars", "--window-size=1280,\(height)", "--screenshot=\(file.path)", url],
            timeout: .seconds(90), environment: ["HOME": home.path, "PATH": "/usr/bin:/bin"])
        XCTAssertEqual(result.status, 0, result.stderrText)
        let png = try Data(contentsOf: file)
        XCTAssertEqual(Array(png.prefix(4)), [0x89, 0x50, 0x4e, 0x47], "not a PNG: \(file.path)")
    }

    /// The integer right after `prefix` in `dom`.
    func number(in dom: String, after prefix: String, file: StaticString = #filePath, line: UInt = #line) throws -> Int {
        let start = try XCTUnwrap(dom.range(of: prefix), "\(prefix) not in the page:\n\(dom)", file: file, line: line).upperBound
        return try XCTUnwrap(Int(dom[start...].prefix { $0.isNumber }), "no number after \(prefix)", file: file, line: line)
    }
}
