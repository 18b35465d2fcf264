import Foundation

/// Reads, from the stub's Prometheus text, which of two upstreams its ranking asks first
/// (``DNSStubUpstreamRanking`` with its default costs: 50 ms for an upstream never measured, and a
/// failure adds 2 s × 0.25, halving every 10 s).
///
/// The failover tests need the encrypted upstream asked first when its server stops. Its first
/// exchange includes the TLS or QUIC handshake, which under a sanitizer measured more than the 50 ms
/// assumed of the other (never asked): the next query then went to the other first, and the
/// encrypted one was never tried (`StubDoQUpstreamTests` in a ThreadSanitizer run: 58.9 ms).
enum StubRankingReader {
    /// The smoothed RTT of `upstream` in seconds; nil when it was never measured (the gauge reads 0).
    static func smoothedRTT(_ upstream: String, in metrics: String) -> Double? {
        value("httpdns_stub_upstream_rtt_seconds{upstream=\"\(upstream)\"} ", in: metrics).flatMap { $0 > 0 ? $0 : nil }
    }

    /// Exchanges of `upstream` that count as failures in its ranking.
    static func failures(_ upstream: String, in metrics: String) -> Int {
        ["error", "timeout", "cancelled", "servfail"].reduce(0) { total, result in
            total + Int(value("httpdns_stub_upstream_queries_total{upstream=\"\(upstream)\",result=\"\(result)\"} ", in: metrics) ?? 0)
        }
    }

    /// Whether the stub asks `first` (listed before `second`) before `second` for the next few
    /// seconds: `first` has not failed and costs no more (equal costs keep the listed order).
    static func asksFirst(_ first: String, before second: String, in metrics: String) -> Bool {
        let firstCost = smoothedRTT(first, in: metrics) ?? 0.05
        // A failure puts at least 0.35 s on `second` for the next five seconds.
        let secondCost = (smoothedRTT(second, in: metrics) ?? 0.05) + (failures(second, in: metrics) > 0 ? 0.35 : 0)
        return failures(first, in: metrics) == 0 && firstCost <= secondCost
    }

    private static func value(_ prefix: String, in metrics: String) -> Double? {
        metrics.split(separator: "\n").first { $0.hasPrefix(prefix) }.flatMap { Double($0.dropFirst(prefix.count)) }
    }
}
