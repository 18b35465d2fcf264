import DNSWire
import Foundation
import HTTPDNSOperations
import HTTPDNSServer
import XCTest

/// The `/metrics` text, read back with a strict parser of the Prometheus text format 0.0.4
/// (https://prometheus.io/docs/instrumenting/exposition_formats/): HELP and TYPE before a family's
/// samples, names and labels by the format's grammar, cumulative histogram buckets ending in `+Inf`.
final class HTTPDNSServerMetricsTests: XCTestCase {
    func testAFreshRegistryHasEveryFamilyAtZero() throws {
        let parsed = try PrometheusText(HTTPDNSServerMetrics().render())
        XCTAssertEqual(parsed.types["httpdns_queries_total"], "counter")
        XCTAssertEqual(parsed.types["httpdns_request_duration_seconds"], "histogram")
        XCTAssertEqual(parsed.types["httpdns_open_connections"], "gauge")
        for family in ["httpdns_queries_by_format_total", "httpdns_responses_total", "httpdns_dns_responses_total",
                       "httpdns_cache_total", "httpdns_upstream_total", "httpdns_connections_total", "httpdns_shed_total",
                       "httpdns_access_log_dropped_total", "httpdns_zone_loads_total", "httpdns_view_queries_total"] {
            XCTAssertEqual(parsed.types[family], "counter", family)
            XCTAssertNotNil(parsed.help[family], family)
        }
        XCTAssertEqual(parsed.value("httpdns_queries_total", ["endpoint": "doh-post"]), 0)
        XCTAssertEqual(parsed.value("httpdns_shed_total", ["reason": "per-client"]), 0)
        XCTAssertEqual(parsed.value("httpdns_upstream_total", ["outcome": "negative-cached"]), 0)
        XCTAssertEqual(parsed.value("httpdns_request_duration_seconds_bucket", ["le": "+Inf"]), 0)
        XCTAssertEqual(parsed.value("httpdns_request_duration_seconds_count"), 0)
        // Every family but the two keyed by status and rcode has its samples from the start (14 of
        // the server's, 2 of origin health, 8 of failure reports).
        XCTAssertEqual(Set(parsed.samples.map(\.name)).count, 24)
        XCTAssertEqual(parsed.value("httpdns_view_queries_total", ["view": "default"]), 0)
        XCTAssertEqual(parsed.value("httpdns_reports_total", ["result": "shed"]), 0)
        XCTAssertEqual(parsed.value("httpdns_report_decisions_total", ["decision": "demoted"]), 0)
        XCTAssertEqual(parsed.types["httpdns_report_tracked_networks"], "gauge")
        XCTAssertEqual(parsed.types["httpdns_zone_names"], "gauge")
    }

    func testQueriesAreCountedByEveryLabel() throws {
        let metrics = HTTPDNSServerMetrics()
        metrics.record(.init(endpoint: .dohPost, format: .wire, status: 200, rcode: .nameError, cache: [.zone],
                             latency: .microseconds(80)))
        var outcomes = HTTPDNSServerMetrics.Outcomes<HTTPDNSServerMetrics.CacheOutcome>()
        outcomes.add(.hit)
        outcomes.add(.miss)
        outcomes.add(.hit)
        metrics.record(.init(endpoint: .dnspod, format: .encrypted, status: 200, cache: outcomes, upstream: [.ok, .negativeCached],
                             latency: .milliseconds(3)))
        metrics.record(.init(endpoint: .other, format: .text, status: 404, latency: .zero))
        metrics.record(.init(endpoint: .other, format: .text, status: 1_000, latency: .zero))
        metrics.connectionOpened()
        metrics.connectionOpened()
        metrics.connectionClosed()
        metrics.shed(.deadline)
        metrics.shed(.streams, count: 3)
        metrics.accessLogDropped(7)
        metrics.zoneLoaded(names: 12)
        metrics.zoneLoadFailed()
        metrics.zoneLoaded(names: 14)

        let parsed = try PrometheusText(metrics.render())
        XCTAssertEqual(parsed.value("httpdns_queries_total", ["endpoint": "doh-post"]), 1)
        XCTAssertEqual(parsed.value("httpdns_queries_total", ["endpoint": "dnspod"]), 1)
        XCTAssertEqual(parsed.value("httpdns_queries_total", ["endpoint": "other"]), 2)
        XCTAssertEqual(parsed.value("httpdns_queries_by_format_total", ["format": "encrypted"]), 1)
        XCTAssertEqual(parsed.value("httpdns_queries_by_format_total", ["format": "text"]), 2)
        XCTAssertEqual(parsed.value("httpdns_responses_total", ["status": "200"]), 2)
        XCTAssertEqual(parsed.value("httpdns_responses_total", ["status": "404"]), 1)
        XCTAssertEqual(parsed.value("httpdns_responses_total", ["status": "0"]), 1)
        XCTAssertNil(parsed.value("httpdns_responses_total", ["status": "502"]))
        XCTAssertEqual(parsed.value("httpdns_dns_responses_total", ["rcode": "NXDOMAIN"]), 1)
        XCTAssertEqual(parsed.value("httpdns_cache_total", ["outcome": "zone"]), 1)
        XCTAssertEqual(parsed.value("httpdns_cache_total", ["outcome": "hit"]), 2)
        XCTAssertEqual(parsed.value("httpdns_cache_total", ["outcome": "miss"]), 1)
        XCTAssertEqual(parsed.value("httpdns_cache_total", ["outcome": "stale"]), 0)
        XCTAssertEqual(parsed.value("httpdns_upstream_total", ["outcome": "ok"]), 1)
        XCTAssertEqual(parsed.value("httpdns_upstream_total", ["outcome": "negative-cached"]), 1)
        XCTAssertEqual(parsed.value("httpdns_upstream_total", ["outcome": "failed"]), 0)
        XCTAssertEqual(parsed.value("httpdns_open_connections"), 1)
        XCTAssertEqual(parsed.value("httpdns_connections_total"), 2)
        XCTAssertEqual(parsed.value("httpdns_shed_total", ["reason": "deadline"]), 1)
        XCTAssertEqual(parsed.value("httpdns_shed_total", ["reason": "streams"]), 3)
        XCTAssertEqual(parsed.value("httpdns_shed_total", ["reason": "connections"]), 0)
        XCTAssertEqual(parsed.value("httpdns_access_log_dropped_total"), 7)
        XCTAssertEqual(parsed.value("httpdns_zone_names"), 14)
        XCTAssertEqual(parsed.value("httpdns_zone_loads_total", ["result": "ok"]), 2)
        XCTAssertEqual(parsed.value("httpdns_zone_loads_total", ["result": "failed"]), 1)
        XCTAssertEqual(metrics.openConnections, 1)
    }

    func testTheStatusSectionsShowTheCountsMetricsShows() {
        let metrics = HTTPDNSServerMetrics()
        metrics.viewsLoaded(["carrier-a", "default"])
        metrics.record(.init(endpoint: .dnspod, format: .text, status: 200, latency: .milliseconds(1), view: "carrier-a"))
        metrics.record(.init(endpoint: .dohGet, format: .wire, status: 200, latency: .milliseconds(1)))
        metrics.shed(.perClient, count: 2)
        metrics.zoneTransfer("example.test", .axfr)
        metrics.zoneTransfer("example.test", view: "carrier-a", .failed, reasons: ["timeout"])
        metrics.zoneSerial("example.test", 2026120601)
        XCTAssertEqual(metrics.queriesStatus().json, #"""
            {"total":2,"byView":[{"view":"carrier-a","queries":1},{"view":"default","queries":0}],\#
            "byFormat":[{"format":"text","queries":1},{"format":"encrypted","queries":0},{"format":"json","queries":0},{"format":"wire","queries":1}],\#
            "byEndpoint":[{"endpoint":"dnspod","queries":1},{"endpoint":"alibaba","queries":0},{"endpoint":"ips","queries":0},\#
            {"endpoint":"doh-get","queries":1},{"endpoint":"doh-post","queries":0},{"endpoint":"doh-json","queries":0},\#
            {"endpoint":"health","queries":0},{"endpoint":"report","queries":0},{"endpoint":"other","queries":0},\#
            {"endpoint":"dot","queries":0},{"endpoint":"doq","queries":0}]}
            """#)
        XCTAssertEqual(metrics.shedStatus()["byReason"], .array(HTTPDNSServerMetrics.ShedReason.allCases.map {
            .object([("reason", .string($0.label)), ("refused", .integer($0 == .perClient ? 2 : 0))])
        }))
        XCTAssertEqual(metrics.zonesStatus()["transfers"]?.json, #"""
            [{"zone":"example.test","view":null,"serial":2026120601,"axfr":1,"ixfr":0,"current":0,"failed":0,"rejected":0,"failureReasons":[]},\#
            {"zone":"example.test","view":"carrier-a","serial":null,"axfr":0,"ixfr":0,"current":0,"failed":1,"rejected":0,"failureReasons":["timeout 1"]}]
            """#)
        let text = metrics.render()
        XCTAssertTrue(text.contains(#"httpdns_zone_serial{zone="example.test"} 2026120601"#), text)
        XCTAssertTrue(text.contains(#"httpdns_zone_transfers_total{zone="example.test",view="carrier-a",result="failed"} 1"#), text)
    }

    func testLatencyHistogramBucketsAreCumulativeWithExactBoundsAndSum() throws {
        let metrics = HTTPDNSServerMetrics()
        for latency: Duration in [.microseconds(50), .microseconds(100), .microseconds(101), .seconds(20), .seconds(-1)] {
            metrics.record(.init(endpoint: .ips, format: .text, status: 200, latency: latency))
        }
        let parsed = try PrometheusText(metrics.render())
        XCTAssertEqual(parsed.value("httpdns_request_duration_seconds_bucket", ["le": "0.0001"]), 3)  // 0 (clamped), 50, 100 µs
        XCTAssertEqual(parsed.value("httpdns_request_duration_seconds_bucket", ["le": "0.00025"]), 4)
        XCTAssertEqual(parsed.value("httpdns_request_duration_seconds_bucket", ["le": "10"]), 4)
        XCTAssertEqual(parsed.value("httpdns_request_duration_seconds_bucket", ["le": "+Inf"]), 5)
        XCTAssertEqual(parsed.value("httpdns_request_duration_seconds_count"), 5)
        XCTAssertEqual(parsed.raw("httpdns_request_duration_seconds_sum"), "20.000251")
        let bounds = parsed.samples.filter { $0.name == "httpdns_request_duration_seconds_bucket" }.map { $0.labels["le"]! }
        XCTAssertEqual(bounds, ["0.0001", "0.00025", "0.0005", "0.001", "0.0025", "0.005", "0.01", "0.025", "0.05", "0.1",
                                "0.25", "0.5", "1", "2.5", "5", "10", "+Inf"])
    }

    func testEndpointsFollowTheServiceRouting() {
        typealias Endpoint = HTTPDNSServerMetrics.Endpoint
        XCTAssertEqual(Endpoint(method: "GET", path: "/d", hasDNSParameter: false), .dnspod)
        XCTAssertEqual(Endpoint(method: "GET", path: "/100000/d", hasDNSParameter: false), .alibaba)
        XCTAssertEqual(Endpoint(method: "GET", path: "/100000/sign_resolve", hasDNSParameter: false), .alibaba)
        XCTAssertEqual(Endpoint(method: "GET", path: "//d", hasDNSParameter: false), .other)
        XCTAssertEqual(Endpoint(method: "GET", path: "/a/b/d", hasDNSParameter: false), .other)
        XCTAssertEqual(Endpoint(method: "GET", path: "/ips", hasDNSParameter: false), .ips)
        XCTAssertEqual(Endpoint(method: "GET", path: "/dns-query", hasDNSParameter: true), .dohGet)
        XCTAssertEqual(Endpoint(method: "GET", path: "/dns-query", hasDNSParameter: false), .dohJSON)
        XCTAssertEqual(Endpoint(method: "POST", path: "/dns-query", hasDNSParameter: false), .dohPost)
        XCTAssertEqual(Endpoint(method: "PUT", path: "/dns-query", hasDNSParameter: false), .other)
        XCTAssertEqual(Endpoint(method: "GET", path: "/resolve", hasDNSParameter: false), .dohJSON)
        XCTAssertEqual(Endpoint(method: "GET", path: "/health", hasDNSParameter: false), .health)
        XCTAssertEqual(Endpoint(method: "GET", path: "/ready", hasDNSParameter: false), .health)
        XCTAssertEqual(Endpoint(method: "GET", path: "/metrics", hasDNSParameter: false), .other)
    }

    func testOutcomeCountsSaturateInsteadOfSpillingIntoTheirNeighbour() {
        var outcomes = HTTPDNSServerMetrics.Outcomes<HTTPDNSServerMetrics.UpstreamOutcome>()
        for _ in 0..<70_000 { outcomes.add(.ok) }
        outcomes.add(.failed)
        XCTAssertEqual(outcomes[.ok], 65_535)
        XCTAssertEqual(outcomes[.failed], 1)
        XCTAssertEqual(outcomes[.negativeCached], 0)
    }

    func testRecordingFromManyThreadsLosesNothing() throws {
        let metrics = HTTPDNSServerMetrics()
        DispatchQueue.concurrentPerform(iterations: 4) { thread in
            for index in 0..<5_000 {
                metrics.record(.init(endpoint: thread % 2 == 0 ? .dohGet : .alibaba, format: .json, status: 200,
                                     cache: [.hit], latency: .microseconds(index)))
                metrics.connectionOpened()
                metrics.connectionClosed()
            }
        }
        let parsed = try PrometheusText(metrics.render())
        XCTAssertEqual(parsed.value("httpdns_queries_total", ["endpoint": "doh-get"]), 10_000)
        XCTAssertEqual(parsed.value("httpdns_queries_total", ["endpoint": "alibaba"]), 10_000)
        XCTAssertEqual(parsed.value("httpdns_cache_total", ["outcome": "hit"]), 20_000)
        XCTAssertEqual(parsed.value("httpdns_request_duration_seconds_count"), 20_000)
        XCTAssertEqual(parsed.value("httpdns_open_connections"), 0)
        XCTAssertEqual(parsed.value("httpdns_connections_total"), 20_000)
    }

    /// The parser itself rejects what the format forbids, so that the tests above can fail.
    func testTheParserRejectsMalformedExposition() {
        let bad = [
            "httpdns_x 1\n",  // sample before TYPE
            "# HELP httpdns_x h\n# TYPE httpdns_x counter\nhttpdns_x 1",  // no final newline
            "# HELP httpdns_x h\n# TYPE httpdns_x counter\nhttpdns_x{a=\"b} 1\n",  // unterminated label value
            "# HELP httpdns_x h\n# TYPE httpdns_x counter\nhttpdns_x{1a=\"b\"} 1\n",  // bad label name
            "# HELP httpdns_x h\n# TYPE httpdns_x counter\nhttpdns_x one\n",  // bad value
            "# HELP httpdns_x h\n# TYPE httpdns_x counter\n# TYPE httpdns_x counter\nhttpdns_x 1\n",  // TYPE twice
            "# HELP h_x h\n# TYPE h_x histogram\nh_x_bucket{le=\"1\"} 2\nh_x_bucket{le=\"+Inf\"} 1\nh_x_sum 1\nh_x_count 1\n",
            "# HELP h_x h\n# TYPE h_x histogram\nh_x_bucket{le=\"1\"} 1\nh_x_sum 1\nh_x_count 1\n",  // no +Inf
        ]
        for text in bad {
            XCTAssertThrowsError(try PrometheusText(text), text)
        }
    }
}

/// A strict reader of the Prometheus text exposition format 0.0.4, for the tests.
struct PrometheusText {
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    struct Sample {
        var name: String
        var labels: [String: String]
        var value: String
    }

    var help: [String: String] = [:]
    var types: [String: String] = [:]
    var samples: [Sample] = []

    init(_ text: String) throws {
        guard text.hasSuffix("\n") else { throw Failure(description: "no final newline") }
        for line in text.dropLast().split(separator: "\n", omittingEmptySubsequences: false).map(String.init) {
            if line.hasPrefix("# HELP ") || line.hasPrefix("# TYPE ") {
                let parts = line.split(separator: " ", maxSplits: 3, omittingEmptySubsequences: false).map(String.init)
                guard parts.count == 4, Self.isMetricName(parts[2]) else { throw Failure(description: "bad comment: \(line)") }
                if parts[1] == "HELP" {
                    guard help.updateValue(parts[3], forKey: parts[2]) == nil else { throw Failure(description: "HELP twice: \(line)") }
                } else {
                    guard ["counter", "gauge", "histogram", "summary", "untyped"].contains(parts[3]),
                          types.updateValue(parts[3], forKey: parts[2]) == nil,
                          !samples.contains(where: { Self.family(of: $0.name, types: [parts[2]: parts[3]]) == parts[2] })
                    else { throw Failure(description: "bad or late TYPE: \(line)") }
                }
            } else if line.hasPrefix("#") || line.isEmpty {
                continue
            } else {
                let sample = try Self.sample(line)
                guard Self.family(of: sample.name, types: types) != nil else {
                    throw Failure(description: "sample without TYPE: \(line)")
                }
                samples.append(sample)
            }
        }
        try checkHistograms()
    }

    func value(_ name: String, _ labels: [String: String] = [:]) -> Double? {
        raw(name, labels).flatMap(Double.init)
    }

    func raw(_ name: String, _ labels: [String: String] = [:]) -> String? {
        let matches = samples.filter { $0.name == name && $0.labels == labels }
        return matches.count == 1 ? matches[0].value : nil
    }

    static func isMetricName(_ name: String) -> Bool {
        let scalars = Array(name.unicodeScalars)
        guard let first = scalars.first, !("0"..."9").contains(first) else { return false }
        return scalars.allSatisfy {
            $0 == "_" || $0 == ":" || ("a"..."z").contains($0) || ("A"..."Z").contains($0) || ("0"..."9").contains($0)
        }
    }

    static func isLabelName(_ name: String) -> Bool {
        isMetricName(name) && !name.contains(":")
    }

    /// The family a sample belongs to: its own name, or a histogram's for `_bucket`, `_sum`, `_count`.
    static func family(of name: String, types: [String: String]) -> String? {
        if types[name] != nil { return name }
        for suffix in ["_bucket", "_sum", "_count"] where name.hasSuffix(suffix) {
            let base = String(name.dropLast(suffix.count))
            if types[base] == "histogram" || types[base] == "summary" { return base }
        }
        return nil
    }

    static func sample(_ line: String) throws -> Sample {
        var rest = Substring(line)
        let nameEnd = rest.firstIndex { $0 == "{" || $0 == " " } ?? rest.endIndex
        let name = String(rest[..<nameEnd])
        guard isMetricName(name) else { throw Failure(description: "bad metric name: \(line)") }
        rest = rest[nameEnd...]
        var labels: [String: String] = [:]
        if rest.first == "{" {
            rest = rest.dropFirst()
            while rest.first != "}" {
                guard let equals = rest.firstIndex(of: "=") else { throw Failure(description: "bad labels: \(line)") }
                let label = String(rest[..<equals])
                guard isLabelName(label), rest[rest.index(after: equals)...].first == "\"" else {
                    throw Failure(description: "bad label: \(line)")
                }
                rest = rest[rest.index(equals, offsetBy: 2)...]
                var value = ""
                while true {
                    guard let character = rest.first else { throw Failure(description: "unterminated label value: \(line)") }
                    rest = rest.dropFirst()
                    if character == "\"" { break }
                    if character == "\\" {
                        guard let escaped = rest.first, ["\\", "\"", "n"].contains(escaped) else {
                            throw Failure(description: "bad escape: \(line)")
                        }
                        value.append(escaped == "n" ? "\n" : escaped)
                        rest = rest.dropFirst()
                    } else {
                        value.append(character)
                    }
                }
                guard labels.updateValue(value, forKey: label) == nil else { throw Failure(description: "label twice: \(line)") }
                if rest.first == "," { rest = rest.dropFirst() } else if rest.first != "}" {
                    throw Failure(description: "bad label separator: \(line)")
                }
            }
            rest = rest.dropFirst()
        }
        guard rest.first == " " else { throw Failure(description: "no value: \(line)") }
        let fields = rest.dropFirst().split(separator: " ", omittingEmptySubsequences: false)
        guard (1...2).contains(fields.count), let value = fields.first, Double(value) != nil || ["+Inf", "-Inf", "NaN"].contains(value),
              fields.count == 1 || Int64(fields[1]) != nil
        else { throw Failure(description: "bad value: \(line)") }
        return Sample(name: name, labels: labels, value: String(value))
    }

    /// Buckets rise with `le`, counts never fall, the last is `+Inf` and equals `_count`.
    func checkHistograms() throws {
        for (family, type) in types where type == "histogram" {
            let buckets = samples.filter { $0.name == family + "_bucket" }
            guard let last = buckets.last, last.labels["le"] == "+Inf" else {
                throw Failure(description: "\(family): no +Inf bucket")
            }
            var previousBound = -Double.infinity
            var previousCount = 0.0
            for bucket in buckets {
                guard let le = bucket.labels["le"], let bound = le == "+Inf" ? .infinity : Double(le), bound > previousBound,
                      let count = Double(bucket.value), count >= previousCount
                else { throw Failure(description: "\(family): buckets not cumulative") }
                previousBound = bound
                previousCount = count
            }
            guard value(family + "_count") == previousCount, value(family + "_sum") != nil else {
                throw Failure(description: "\(family): _count differs from +Inf or _sum missing")
            }
        }
    }
}
