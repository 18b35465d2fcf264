import HTTPDNSCore

/// Names whose upstream lookup failed a moment ago, answered `SERVFAIL` at once until the entry
/// expires instead of waiting out the upstream timeout again (RFC 9520, negative caching of
/// resolution failures).
///
/// A plain value with an explicit `now`; the service keeps it behind a lock. Bounded: at most
/// ``capacity`` names, expired entries swept when full, and the soonest to expire evicted after that.
package struct HTTPDNSUpstreamFailureCache: Sendable {
    /// Most names remembered. 10,000.
    package static let capacity = 10_000

    package init() {}

    private var expiries: [HTTPDNSCacheKey: ContinuousClock.Instant] = [:]

    /// How many names are remembered (expired ones included until swept).
    package var count: Int { expiries.count }

    /// Whether `key` failed less than its TTL ago.
    package func contains(_ key: HTTPDNSCacheKey, now: ContinuousClock.Instant) -> Bool {
        guard let expiry = expiries[key] else { return false }
        return now < expiry
    }

    /// Remembers that `key` failed, for `ttl` from `now` (nothing for a TTL of zero or less).
    package mutating func insert(_ key: HTTPDNSCacheKey, ttl: Duration, now: ContinuousClock.Instant) {
        guard ttl > .zero else { return }
        if expiries[key] == nil, expiries.count >= Self.capacity {
            expiries = expiries.filter { now < $0.value }
            if expiries.count >= Self.capacity, let soonest = expiries.min(by: { $0.value < $1.value }) {
                expiries[soonest.key] = nil
            }
        }
        expiries[key] = now.advanced(by: ttl)
    }

    /// Forgets `key` (an answer came after all).
    package mutating func remove(_ key: HTTPDNSCacheKey) {
        expiries[key] = nil
    }
}
