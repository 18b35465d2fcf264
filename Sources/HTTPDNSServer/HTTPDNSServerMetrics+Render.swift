import DNSWire
import HTTPDNSOperations

extension HTTPDNSServerMetrics {
    /// The `Content-Type` of ``render()``.
    package static let contentType = HTTPDNSPrometheusText.contentType

    /// Every series in the Prometheus text exposition format 0.0.4: for each family a `# HELP` and
    /// a `# TYPE` line, then its samples; a histogram as cumulative `_bucket{le=…}` samples ending
    /// with `+Inf`, then `_sum` and `_count`.
    ///
    /// Label sets that cannot be known in advance (HTTP status, DNS response code) appear once
    /// counted; every other series is always present, at 0 until something happens.
    public func render() -> String {
        let state = self.state.withLock { $0 }
        var text = HTTPDNSPrometheusText(prefix: "httpdns_", capacity: 4_096)
        func family(_ name: String, _ type: String, _ help: String) { text.family(name, type, help) }
        func sample(_ name: String, _ labels: String, _ value: some BinaryInteger) { text.sample(name, labels, value) }

        family("queries_total", "counter", "Requests answered, by endpoint.")
        for endpoint in Endpoint.allCases {
            sample("queries_total", "endpoint=\"\(endpoint.label)\"", state.endpoints[endpoint.rawValue])
        }
        family("queries_by_format_total", "counter", "Requests answered, by answer format.")
        for format in Format.allCases {
            sample("queries_by_format_total", "format=\"\(format.label)\"", state.formats[format.rawValue])
        }
        family("responses_total", "counter", "HTTP responses sent, by status (0: outside 100-599).")
        for (slot, count) in state.statuses.enumerated() where count > 0 {
            sample("responses_total", "status=\"\(slot == 500 ? 0 : slot + 100)\"", count)
        }
        family("dns_responses_total", "counter", "DNS answers, by response code.")
        for (code, count) in state.rcodes.enumerated() where count > 0 {
            sample("dns_responses_total", "rcode=\"\(DNSResponseCode(UInt8(code)))\"", count)
        }
        family("cache_total", "counter", "Names answered, by where the answer came from.")
        for outcome in CacheOutcome.allCases {
            sample("cache_total", "outcome=\"\(outcome.label)\"", state.cache[outcome.rawValue])
        }
        family("upstream_total", "counter", "Names sent upstream, by outcome.")
        for outcome in UpstreamOutcome.allCases {
            sample("upstream_total", "outcome=\"\(outcome.label)\"", state.upstream[outcome.rawValue])
        }

        family("request_duration_seconds", "histogram", "Time from request head to response.")
        var cumulative: UInt64 = 0
        for (slot, bound) in Self.latencyBucketsMicroseconds.enumerated() {
            cumulative &+= state.latencyBuckets[slot]
            sample("request_duration_seconds_bucket", "le=\"\(Self.seconds(fromMicroseconds: UInt64(bound)))\"", cumulative)
        }
        cumulative &+= state.latencyBuckets[Self.latencyBucketsMicroseconds.count]
        sample("request_duration_seconds_bucket", "le=\"+Inf\"", cumulative)
        text.sample("request_duration_seconds_sum", "", Self.seconds(fromMicroseconds: state.latencySumMicroseconds))
        sample("request_duration_seconds_count", "", state.latencyCount)

        family("open_connections", "gauge", "Client connections open now.")
        sample("open_connections", "", state.openConnections)
        family("connections_total", "counter", "Client connections accepted.")
        sample("connections_total", "", state.connections)
        family("shed_total", "counter", "Connections or requests refused by a limit, by reason.")
        for reason in ShedReason.allCases {
            sample("shed_total", "reason=\"\(reason.label)\"", state.shed[reason.rawValue])
        }
        family("access_log_dropped_total", "counter", "Access-log lines dropped because the writer lagged.")
        sample("access_log_dropped_total", "", state.accessLogDropped)
        family("zone_names", "gauge", "Names in the zone in service.")
        sample("zone_names", "", state.zoneNames)
        family("zone_loads_total", "counter", "Zone loads and reloads, by result.")
        sample("zone_loads_total", "result=\"ok\"", state.zoneLoads)
        sample("zone_loads_total", "result=\"failed\"", state.zoneLoadFailures)
        family("view_queries_total", "counter", "Requests answered, by the view of their client.")
        for (slot, name) in state.viewNames.enumerated() {
            sample("view_queries_total", "view=\"\(name)\"", state.viewCounts[slot])
        }
        renderHealth(into: &text)
        renderTransfers(into: &text)
        text.append(reports.render())
        return text.text
    }

    /// Exact decimal seconds (``HTTPDNSPrometheusText/seconds(fromMicroseconds:)``).
    static func seconds(fromMicroseconds micros: UInt64) -> String {
        HTTPDNSPrometheusText.seconds(fromMicroseconds: micros)
    }
}
