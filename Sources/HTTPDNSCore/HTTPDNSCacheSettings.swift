/// Cache tunables, with the numbers vendors and RFC 8767 use.
public struct HTTPDNSCacheSettings: Sendable, Hashable {
    /// Answers live at least this long (seconds), whatever the provider said. Default 60.
    public var minimumTTL: Int = 60
    /// Answers live at most this long (seconds). Default 86,400 (one day).
    public var maximumTTL: Int = 86_400
    /// TTL used when a provider gives none. Default 300.
    public var defaultTTL: Int = 300
    /// Fraction of the TTL after which a hit triggers a background refresh. Default 0.75.
    public var refreshFraction: Double = 0.75
    /// TTL given to a stale answer, and how long it is served before upstream is tried again. Default 30 (RFC 8767).
    public var staleTTL: Int = 30
    /// How long after expiry an entry may still be served stale (seconds). Default 86,400 (RFC 8767: 1-3 days).
    public var maximumStaleAge: Int = 86_400
    /// At most this many entries; the least recently used is evicted. Default 10,000.
    public var capacity: Int = 10_000

    public init() {}
}
