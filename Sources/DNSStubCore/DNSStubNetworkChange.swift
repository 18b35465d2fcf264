import DNSWire
import HTTPDNSCore

/// What `httpdns stub` does to its own state when the host moves to another network (an address or
/// a default route came or went, as `HTTPDNSNetworkWatcher` reports it), as a value applied to
/// that state with an explicit `now`.
///
/// - The upstreams' health (``DNSStubUpstreamHealth``) and rankings (``DNSStubUpstreamRanking``)
///   start over: round-trip times measured behind the old gateway, and failures seen while the link
///   was down, say nothing of the new path. An upstream marked down must be asked at the next query,
///   not after the failure recheck timer or its failure score's half-life.
/// - Positive answers of the wire cache are kept as they are: the stub asks the same configured
///   upstreams on every network, so their records are still the truth, and they are what the host
///   lives on until the new network works (the engine, by contrast, expires its addresses: its
///   providers answer by where the client is).
/// - Negative answers (NXDOMAIN, NODATA) are expired, not dropped: a name that failed on the old
///   network (the VPN's names before the VPN came up, a captive portal's refusal) is asked again at
///   its next query, and while the upstreams still fail the old negative answer goes out stale
///   (RFC 8767, EDE 19) rather than a SERVFAIL.
///
/// The I/O shell also drops its HTTP connections (providers, DoH upstreams) and tells the engine (`HTTPDNSEngine`'s own
/// `networkDidChange()`); neither is a value.
package struct DNSStubNetworkChange: Sendable, Hashable {
    /// Negative answers expired by the change.
    package var negativeAnswersExpired = 0
    /// Upstream rankings started over (one per upstream group: the default one and each route's).
    package var rankingsReset = 0

    package init() {}

    /// Applies the change to the stub's state at `now` (the cache's clock).
    /// - Parameters:
    ///   - cache: keeps its positive answers; its negative ones expire (``DNSStubCache/expireNegativeAnswers(now:)``).
    ///   - health: no longer down.
    ///   - rankings: every upstream unmeasured, with no failures.
    package static func apply(
        cache: inout DNSStubCache, health: inout DNSStubUpstreamHealth, rankings: inout [DNSStubUpstreamRanking], now: Double
    ) -> DNSStubNetworkChange {
        var change = DNSStubNetworkChange()
        change.negativeAnswersExpired = cache.expireNegativeAnswers(now: now)
        health = DNSStubUpstreamHealth(configuration: health.configuration)
        rankings = rankings.map { DNSStubUpstreamRanking(count: $0.entries.count, configuration: $0.configuration) }
        change.rankingsReset = rankings.count
        return change
    }
}

extension DNSStubCache {
    /// Marks every fresh negative answer (NXDOMAIN, or NODATA: no record of the type asked) expired
    /// at `now`: the next lookup misses it and asks the upstream, and it is served stale if that
    /// fails (within ``Configuration/maximumStaleAge`` from now). Positive answers are untouched, and
    /// the LRU order is kept.
    /// - Returns: how many entries were expired.
    package mutating func expireNegativeAnswers(now: Double) -> Int {
        var expired = 0
        // Least recently used first: re-inserting each makes it the most recent, so the order holds.
        for key in keys.reversed() {
            guard var entry = peek(key) else { continue }
            if now < entry.expiresAt, Self.isNegative(entry.response, type: key.type) {
                // Expired now, whatever the stored time says (a clock set back included).
                entry.storedAt = min(entry.storedAt, now)
                entry.ttl = UInt32(max(0, (now - entry.storedAt).rounded(.down)))
                expired += 1
            }
            insert(key, entry)
        }
        return expired
    }

    /// Whether `response`, stored under a key of `type` (nil: the whole name), is negative.
    static func isNegative(_ response: DNSStubResponse, type: DNSRecordType?) -> Bool {
        guard response.rcode == .noError, let type else { return true }
        return !response.answers.contains { type == .ANY || $0.type == type }
    }
}
