import HTTPDNSOperations
import XCTest

/// The operator console's page, rendered from values: what it escapes, how sections become tables,
/// which `Accept` gets it, and the JSON the same document writes.
final class HTTPDNSStatusPageTests: XCTestCase {
    static let script = "<script>alert(1)</script>"

    func testEscapingLeavesNoMarkupFromOutside() {
        XCTAssertEqual(HTTPDNSHTML.escaped(Self.script), "&lt;script&gt;alert(1)&lt;/script&gt;")
        XCTAssertEqual(HTTPDNSHTML.escaped(#"a&b "c" 'd'"#), "a&amp;b &quot;c&quot; &#39;d&#39;")
        XCTAssertEqual(HTTPDNSHTML.escaped("tab\there\nnul\u{0}bell\u{7}c1\u{85}é"), "tab\there\nnul\u{FFFD}bell\u{FFFD}c1\u{FFFD}é")
        XCTAssertEqual(HTTPDNSHTML.escaped("&lt;"), "&amp;lt;", "an entity from outside is shown as typed")
    }

    func testNamesAndViewsHoldingScriptAreShownAsText() {
        let document = HTTPDNSStatusValue.object([
            ("health", .object([("origins", .array([.object([
                ("address", .string("127.0.0.2")), ("check", .string("http:80/" + Self.script)),
                ("names", .array([.string(Self.script + ".example.test")])),
            ])]))])),
            ("reports", .object([("byView", .array([.object([("view", .string(Self.script)), ("down", .integer(1))])]))])),
            (Self.script, .object([(Self.script, .string("x\"><img src=x onerror=alert(1)>"))])),
        ])
        let page = HTTPDNSStatusPage.render(title: "t" + Self.script, document: document)
        XCTAssertFalse(page.contains("<script"), page)
        XCTAssertFalse(page.contains("<img"), page)
        XCTAssertTrue(page.contains("x&quot;&gt;&lt;img src=x onerror=alert(1)&gt;"), "a value could close an attribute")
        XCTAssertTrue(page.contains("<td data-key=\"check\">http:80/&lt;script&gt;alert(1)&lt;/script&gt;</td>"), page)
        XCTAssertTrue(page.contains("<td data-key=\"view\">&lt;script&gt;alert(1)&lt;/script&gt;</td>"), page)
        XCTAssertTrue(page.contains("<section id=\"&lt;script&gt;alert(1)&lt;/script&gt;\"><h2>&lt;script&gt;"), page)
        XCTAssertTrue(page.contains("<title>t&lt;script&gt;alert(1)&lt;/script&gt;</title>"), page)
    }

    func testSectionsBecomeTablesAndThePageRefreshesItself() {
        let document = HTTPDNSStatusValue.object([
            ("queries", .object([
                ("total", .integer(7)),
                ("byView", .array([
                    .object([("view", .string("carrier-a")), ("queries", .integer(5))]),
                    .object([("view", .string("default")), ("queries", .integer(2)), ("extra", .bool(true))]),
                ])),
                ("tracked", .object([("addresses", .integer(1))])),
                ("none", .array([])),
                ("tags", .array([.string("a"), .string("b")])),
            ])),
            ("health", .object([("origins", .array([.object([("state", .string("down")), ("last", .null)])]))])),
        ])
        let page = HTTPDNSStatusPage.render(title: "httpdns serve", document: document)
        XCTAssertTrue(page.hasPrefix("<!DOCTYPE html>"))
        XCTAssertTrue(page.contains("<meta http-equiv=\"refresh\" content=\"5\">"))
        XCTAssertTrue(page.contains("<section id=\"queries\"><h2>queries</h2>"))
        XCTAssertTrue(page.contains("<tr><th>total</th><td data-key=\"total\" class=\"n\">7</td></tr>"), page)
        XCTAssertTrue(page.contains("<h3>byView</h3>\n<table class=\"grid\"><thead><tr><th>view</th><th>queries</th><th>extra</th></tr></thead>"), page)
        XCTAssertTrue(page.contains("<tr><td data-key=\"view\">carrier-a</td><td data-key=\"queries\" class=\"n\">5</td><td data-key=\"extra\"><span class=\"empty\">-</span></td></tr>"), page)
        XCTAssertTrue(page.contains("<h3>tracked</h3>\n<table class=\"fields\">\n<tr><th>addresses</th>"), page)
        XCTAssertTrue(page.contains("<h3>none</h3>\n<p class=\"empty\">none</p>"), page)
        XCTAssertTrue(page.contains("<ul>\n<li>a</li>\n<li>b</li>\n</ul>"), page)
        XCTAssertTrue(page.contains("<td data-key=\"state\" class=\"bad\">down</td>"), page)
        for forbidden in ["<script", "<link", "src=", "href=", "<form", "<iframe"] {
            XCTAssertFalse(page.contains(forbidden), forbidden)
        }
        XCTAssertEqual(HTTPDNSStatusPage.contentSecurityPolicy, "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'")
    }

    func testBrowsersGetThePageAndEverythingElseJSON() {
        let chromium = "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,image/apng,*/*;q=0.8,application/signed-exchange;v=b3;q=0.7"
        let firefox = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"
        for accept in [chromium, firefox, "text/html", "TEXT/HTML ; q=0.5, application/json;q=0.4", "text/*"] {
            XCTAssertTrue(HTTPDNSStatusPage.prefersHTML(accept: accept), accept)
        }
        for accept in [nil, "", "*/*", "application/json", "text/html;q=0.5, application/json", "text/html, application/json",
                       "text/html;q=0", "text/plain", "text/html;q=0.1, */*", "garbage", String(repeating: "text/html,", count: 500)] {
            XCTAssertFalse(HTTPDNSStatusPage.prefersHTML(accept: accept), accept ?? "none")
        }
    }

    func testTheValueWritesAndReadsJSONInOrder() throws {
        let value = HTTPDNSStatusValue.object([
            ("b", .integer(2)), ("a", .array([.string("x\"<"), .bool(false), .null])), ("c", .decimal(0.000_012_34, digits: 6)),
            ("d", .decimal(12.5)), ("e", .decimal(-0.25, digits: 1)), ("f", .decimal(.nan)),
        ])
        XCTAssertEqual(value.json, #"{"b":2,"a":["x\"<",false,null],"c":0.000012,"d":12.5,"e":-0.3,"f":null}"#)
        XCTAssertEqual(try HTTPDNSStatusValue(json: value.json), value)
        XCTAssertEqual(value["b"], .number("2"))
        XCTAssertNil(value["z"])
        XCTAssertThrowsError(try HTTPDNSStatusValue(json: "{\"a\":"))
    }
}
