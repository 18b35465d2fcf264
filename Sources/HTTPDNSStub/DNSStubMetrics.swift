import DNSStubCore
import Foundation
import HTTPDNSCore
import HTTPDNSOperations

/// The stub's counters for `--metrics`: queries by transport and by where their answer came from,
/// and per upstream its outcomes, its smoothed RTT and how often it was hedged. Rendered in the
/// Prometheus text format 0.0.4 (``HTTPDNSPrometheusText``), as the service's metrics are.
package final class DNSStubMetrics: Sendable {
    /// Where an answer came from (`source` label and the query log's `source`).
    package enum Source: String, Sendable, CaseIterable {
        case engine, cache, stale, upstream, route, refused, servfail
        /// A `--hosts` entry.
        case hosts
        /// FORMERR or NOTIMP from the front, before any resolving.
        case rejected
        /// Over the client's rate limit: dropped, TC=1 or REFUSED (``DNSStubRateLimiter``).
        case ratelimited
    }

    /// One upstream exchange's outcome (`result` label).
    package enum Result: String, Sendable, CaseIterable {
        /// An answer other than SERVFAIL/REFUSED, used or not.
        case answered
        /// SERVFAIL or REFUSED.
        case servfail
        case timeout
        case error
        /// Abandoned because another upstream answered first.
        case cancelled
    }

    private struct Upstream {
        var results = [UInt64](repeating: 0, count: Result.allCases.count)
        var hedged: UInt64 = 0
        var smoothedRTT: Double = 0
    }

    private struct State {
        /// [transport: udp 0, tcp 1][source].
        var queries = [[UInt64]](repeating: [UInt64](repeating: 0, count: Source.allCases.count), count: 2)
        var upstreams: [String: Upstream] = [:]
        var upstreamOrder: [String] = []
        var repeated: UInt64 = 0
    }

    private let state = HTTPDNSLock(State())
    /// Read at render time: entries in the wire cache, and query-log lines dropped.
    private let gauges: HTTPDNSLock<(cacheEntries: @Sendable () -> Int, logDropped: @Sendable () -> UInt64)>

    package init() {
        gauges = HTTPDNSLock((cacheEntries: { 0 }, logDropped: { 0 }))
    }

    /// Where the cache size and the query log's drops are read from.
    package func observe(cacheEntries: @escaping @Sendable () -> Int, logDropped: @escaping @Sendable () -> UInt64) {
        gauges.withLock { $0 = (cacheEntries, logDropped) }
    }

    /// Lists `name` (at 0) before anything happens to it, so that every upstream is scraped.
    package func register(_ name: String) {
        state.withLock { state in
            guard state.upstreams[name] == nil else { return }
            state.upstreams[name] = Upstream()
            state.upstreamOrder.append(name)
        }
    }

    /// One query answered; `repeated` when the UDP thread's packet cache answered it.
    package func query(_ transport: DNSStubTransport, _ source: Source, repeated: Bool = false) {
        state.withLock { state in
            state.queries[transport == .udp ? 0 : 1][Self.slot(source)] &+= 1
            if repeated { state.repeated &+= 1 }
        }
    }

    package func upstream(_ name: String, _ result: Result, smoothedRTT: Double? = nil) {
        register(name)
        state.withLock { state in
            state.upstreams[name]!.results[Result.allCases.firstIndex(of: result)!] &+= 1
            if let smoothedRTT { state.upstreams[name]!.smoothedRTT = smoothedRTT }
        }
    }

    package func hedged(_ name: String) {
        register(name)
        state.withLock { $0.upstreams[name]!.hedged &+= 1 }
    }

    /// The counts as they stand, for the status document (``DNSStubResolver/statusDocument()``).
    package struct Snapshot: Sendable {
        /// Queries by transport (`udp`, `tcp`), then by source in ``Source/allCases`` order.
        package var queries: [(transport: String, counts: [UInt64])]
        /// Per upstream name: results in ``Result/allCases`` order, and hedges.
        package var upstreams: [String: (results: [UInt64], hedged: UInt64)]
        /// Answers repeated from the UDP thread's packet cache.
        package var repeated: UInt64

        /// The queries of every transport from `source`.
        package func count(_ source: Source) -> UInt64 {
            queries.reduce(0) { $0 + $1.counts[DNSStubMetrics.slot(source)] }
        }
    }

    /// The counts now.
    package func snapshot() -> Snapshot {
        let state = self.state.withLock { $0 }
        return Snapshot(
            queries: [("udp", state.queries[0]), ("tcp", state.queries[1])],
            upstreams: state.upstreams.mapValues { ($0.results, $0.hedged) }, repeated: state.repeated)
    }

    private static func slot(_ source: Source) -> Int { Source.allCases.firstIndex(of: source)! }

    /// Every family, each with `# HELP` and `# TYPE`; label values are upstream texts as given on
    /// the command line, escaped as the format requires.
    package func render() -> String {
        let state = self.state.withLock { $0 }
        let gauges = self.gauges.withLock { $0 }
        var text = HTTPDNSPrometheusText(prefix: "httpdns_stub_")
        func family(_ name: String, _ type: String, _ help: String) { text.family(name, type, help) }
        func sample(_ name: String, _ labels: String, _ value: String) { text.sample(name, labels, value) }
        func label(_ value: String) -> String { HTTPDNSPrometheusText.label(value) }
        family("queries_total", "counter", "Queries answered, by transport and by where the answer came from.")
        for (slot, transport) in ["udp", "tcp"].enumerated() {
            for source in Source.allCases {
                sample("queries_total", "transport=\"\(transport)\",source=\"\(source.rawValue)\"", "\(state.queries[slot][Self.slot(source)])")
            }
        }
        family("upstream_queries_total", "counter", "Upstream exchanges, by upstream and result.")
        for name in state.upstreamOrder {
            for (slot, result) in Result.allCases.enumerated() {
                sample("upstream_queries_total", "upstream=\(label(name)),result=\"\(result.rawValue)\"", "\(state.upstreams[name]!.results[slot])")
            }
        }
        family("upstream_rtt_seconds", "gauge", "Smoothed round-trip time of each upstream (RFC 6298 SRTT).")
        for name in state.upstreamOrder {
            let micros = UInt64(max(0, state.upstreams[name]!.smoothedRTT * 1e6))
            sample("upstream_rtt_seconds", "upstream=\(label(name))", HTTPDNSPrometheusText.seconds(fromMicroseconds: micros))
        }
        family("upstream_hedged_total", "counter", "Queries also sent to the next upstream because this one was slower than usual.")
        for name in state.upstreamOrder {
            sample("upstream_hedged_total", "upstream=\(label(name))", "\(state.upstreams[name]!.hedged)")
        }
        family("cache_entries", "gauge", "Entries in the wire cache, stale ones included.")
        sample("cache_entries", "", "\(gauges.cacheEntries())")
        family("query_log_dropped_total", "counter", "Query-log lines dropped because the writer lagged.")
        sample("query_log_dropped_total", "", "\(gauges.logDropped())")
        return text.text
    }
}
