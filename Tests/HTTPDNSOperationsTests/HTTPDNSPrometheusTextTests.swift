import HTTPDNSOperations
import XCTest

/// The one Prometheus text writer the service's, the reports' and the stub's metrics share.
final class HTTPDNSPrometheusTextTests: XCTestCase {
    func testFamiliesAndSamplesTakeThePrefix() {
        var text = HTTPDNSPrometheusText(prefix: "httpdns_stub_")
        text.family("queries_total", "counter", "Queries answered.")
        text.sample("queries_total", "transport=\"udp\"", 3)
        text.sample("cache_entries", "", UInt64(0))
        text.sample("upstream_rtt_seconds", "upstream=\"a\"", HTTPDNSPrometheusText.seconds(fromMicroseconds: 250))
        XCTAssertEqual(text.text, """
            # HELP httpdns_stub_queries_total Queries answered.
            # TYPE httpdns_stub_queries_total counter
            httpdns_stub_queries_total{transport="udp"} 3
            httpdns_stub_cache_entries 0
            httpdns_stub_upstream_rtt_seconds{upstream="a"} 0.00025

            """)
    }

    func testAppendKeepsTheOtherTextAsItIs() {
        var first = HTTPDNSPrometheusText(prefix: "httpdns_")
        first.sample("a", "", 1)
        var second = HTTPDNSPrometheusText(prefix: "httpdns_")
        second.sample("b", "", 2)
        first.append(second)
        XCTAssertEqual(first.text, "httpdns_a 1\nhttpdns_b 2\n")
    }

    func testSecondsAreExactDecimals() {
        XCTAssertEqual(HTTPDNSPrometheusText.seconds(fromMicroseconds: 0), "0")
        XCTAssertEqual(HTTPDNSPrometheusText.seconds(fromMicroseconds: 10_000_000), "10")
        XCTAssertEqual(HTTPDNSPrometheusText.seconds(fromMicroseconds: 2_500_000), "2.5")
        XCTAssertEqual(HTTPDNSPrometheusText.seconds(fromMicroseconds: 1), "0.000001")
    }

    /// Backslash, quote and newline are escaped, a newline inside `\r\n` too (one `Character`).
    func testLabelValuesAreEscapedScalarByScalar() {
        XCTAssertEqual(HTTPDNSPrometheusText.labelValue(#"a\b"c"#), #"a\\b\"c"#)
        XCTAssertEqual(HTTPDNSPrometheusText.labelValue("a\nb\r\nc"), "a\\nb\r\\nc")
        XCTAssertEqual(HTTPDNSPrometheusText.label("é"), "\"é\"")
    }
}
