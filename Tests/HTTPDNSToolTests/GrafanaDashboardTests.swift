import Foundation
import HTTPDNSTestSupport
import XCTest

/// `contrib/grafana/httpdns.json` names only metrics that a live `serve` and `stub` export: every
/// panel query and template variable is read for the metric names it uses, and each must be a
/// family in the `/metrics` of the running binary (`httpdns_stub_…` the stub's, the rest serve's).
/// A renamed metric, or a panel written for one that does not exist, fails here.
final class GrafanaDashboardTests: ToolTestCase {
    static let dashboard = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("contrib/grafana/httpdns.json")

    func testEveryQueryNamesAMetricALiveServerExports() throws {
        let queries = try Self.queries()
        XCTAssertGreaterThanOrEqual(queries.count, 20, "the dashboard lost its panels")
        let (_, serveBase) = try startConsoleServe()
        let (_, stubBase) = try startConsoleStub()
        let serve = try Self.families(try consoleCurl(["\(serveBase)/metrics"]))
        let stub = try Self.families(try consoleCurl(["\(stubBase)/metrics"]))
        var named = Set<String>()
        for query in queries {
            let metrics = Self.metricNames(in: query)
            XCTAssertFalse(metrics.isEmpty, "a query names no metric: \(query)")
            for metric in metrics {
                named.insert(metric)
                let exported = metric.hasPrefix("httpdns_stub_") ? stub : serve
                XCTAssertTrue(exported.contains(metric), "\(metric) (in \(query)) is not in the \(metric.hasPrefix("httpdns_stub_") ? "stub" : "serve")'s /metrics")
            }
        }
        // The panels cover both daemons and the console's main concerns.
        for metric in ["httpdns_view_queries_total", "httpdns_queries_by_format_total", "httpdns_shed_total", "httpdns_origin_up",
                       "httpdns_report_decisions_in_force", "httpdns_stub_upstream_queries_total", "httpdns_stub_cache_entries"] {
            XCTAssertTrue(named.contains(metric), "no panel shows \(metric)")
        }
    }

    func testTheMetricNameReaderSkipsFunctionsLabelsAndStrings() {
        XCTAssertEqual(
            Self.metricNames(in: #"histogram_quantile(0.99, sum by (le, view) (rate(httpdns_a_bucket{instance=~"x_y", b="c"}[$__rate_interval])))"#),
            ["httpdns_a_bucket"])
        XCTAssertEqual(Self.metricNames(in: "count by (address) (httpdns_origin_up == 0) / ignoring(x) httpdns_b"), ["httpdns_origin_up", "httpdns_b"])
        XCTAssertEqual(Self.metricNames(in: "label_values(httpdns_queries_total, instance)"), ["httpdns_queries_total"])
        XCTAssertEqual(Self.metricNames(in: "sum(rate(httpdn_typo_total[5m]))"), ["httpdn_typo_total"])
    }

    // MARK: - Reading the dashboard and the metrics

    /// Every panel target's `expr` (rows' nested panels too) and every query variable's query.
    static func queries() throws -> [String] {
        let object = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(contentsOf: dashboard)) as? [String: Any])
        var queries: [String] = []
        func visit(_ panels: [[String: Any]]) {
            for panel in panels {
                for target in panel["targets"] as? [[String: Any]] ?? [] {
                    queries.append(target["expr"] as? String ?? "")
                }
                visit(panel["panels"] as? [[String: Any]] ?? [])
            }
        }
        visit(try XCTUnwrap(object["panels"] as? [[String: Any]]))
        let variables = (object["templating"] as? [String: Any])?["list"] as? [[String: Any]] ?? []
        for variable in variables where variable["type"] as? String == "query" {
            let query = variable["query"]
            queries.append((query as? String) ?? ((query as? [String: Any])?["query"] as? String) ?? "")
        }
        return queries
    }

    /// The metric names a PromQL query uses, in order: identifiers that are not functions (followed
    /// by `(`), aggregations, keywords, label names in `by (…)`, `without (…)`, `on (…)`,
    /// `ignoring (…)`, `group_left (…)`, `group_right (…)` or in `{…}`, strings, durations in `[…]`
    /// or numbers; of Grafana's `label_values(metric, label)`, the metric.
    static func metricNames(in query: String) -> [String] {
        let keywords: Set<String> = ["by", "without", "on", "ignoring", "group_left", "group_right", "bool", "and", "or", "unless", "offset"]
        // Aggregations may put `by (…)` between their name and their `(`.
        let aggregations: Set<String> = [
            "sum", "min", "max", "avg", "group", "stddev", "stdvar", "count", "count_values", "bottomk", "topk", "quantile",
        ]
        let scalars = Array(query.unicodeScalars)
        var names: [String] = []
        var index = 0
        var labelGroup = false
        func isStart(_ scalar: Unicode.Scalar) -> Bool { scalar == "_" || scalar == ":" || (scalar.properties.isAlphabetic && scalar.isASCII) }
        func isPart(_ scalar: Unicode.Scalar) -> Bool { isStart(scalar) || ("0"..."9").contains(scalar) }
        while index < scalars.count {
            let scalar = scalars[index]
            switch scalar {
            case "\"", "'", "`":
                index += 1
                while index < scalars.count, scalars[index] != scalar { index += scalars[index] == "\\" ? 2 : 1 }
                index += 1
            case "{", "[":
                let close: Unicode.Scalar = scalar == "{" ? "}" : "]"
                while index < scalars.count, scalars[index] != close {
                    if scalars[index] == "\"" {
                        index += 1
                        while index < scalars.count, scalars[index] != "\"" { index += scalars[index] == "\\" ? 2 : 1 }
                    }
                    index += 1
                }
                index += 1
            case "(" where labelGroup:
                while index < scalars.count, scalars[index] != ")" { index += 1 }
                labelGroup = false
                index += 1
            case _ where ("0"..."9").contains(scalar) || scalar == "$":
                // A number (0.99, 1e3) or a dashboard variable ($__rate_interval).
                index += 1
                while index < scalars.count, isPart(scalars[index]) || scalars[index] == "." { index += 1 }
            case _ where isStart(scalar):
                var end = index
                while end < scalars.count, isPart(scalars[end]) { end += 1 }
                let word = String(String.UnicodeScalarView(scalars[index..<end]))
                var next = end
                while next < scalars.count, scalars[next] == " " { next += 1 }
                if keywords.contains(word) {
                    labelGroup = next < scalars.count && scalars[next] == "("
                } else if word == "label_values", next < scalars.count, scalars[next] == "(" {
                    // Grafana's `label_values(metric, label)`: the metric, then a label name.
                    var close = next
                    while close < scalars.count, scalars[close] != ")" { close += 1 }
                    let arguments = String(String.UnicodeScalarView(scalars[(next + 1)..<close])).split(separator: ",")
                    if let metric = arguments.first, arguments.count == 2 { names += metricNames(in: String(metric)) }
                    end = close + 1
                } else if !aggregations.contains(word), next >= scalars.count || scalars[next] != "(" {
                    names.append(word)
                }
                index = end
            default:
                index += 1
            }
        }
        return names
    }

    /// The family and sample names of a `/metrics` answer (status 200): `# TYPE` names and the
    /// names of sample lines (a histogram's `_bucket`, `_sum`, `_count`).
    static func families(_ response: (body: String, code: Int)) throws -> Set<String> {
        XCTAssertEqual(response.code, 200, response.body)
        var names = Set<String>()
        for line in response.body.split(separator: "\n") {
            if line.hasPrefix("# TYPE ") {
                names.insert(String(line.dropFirst("# TYPE ".count).prefix { $0 != " " }))
            } else if !line.hasPrefix("#") {
                names.insert(String(line.prefix { $0 != "{" && $0 != " " }))
            }
        }
        return names
    }
}
