/// What the engine answers for one name: the addresses to connect to, in order.
public struct HTTPDNSAnswer: Sendable, Hashable {
    /// Where an answer came from.
    public enum Origin: String, Sendable, Hashable, Codable {
        /// Fresh from an HTTPDNS provider.
        case httpdns
        /// From the LocalDNS fallback (system resolver or a chosen DNS server), or from the system
        /// resolver placed among the resolvers.
        case localDNS
        /// From a plain DNS server placed among the resolvers (`udp=`): neither encrypted nor
        /// authenticated, so no better than LocalDNS against an on-path attacker.
        case dns
        /// From a static entry.
        case `static`
    }

    /// The name, lower-case, without a trailing dot.
    public var host: String
    /// Addresses after hygiene: validated, deduplicated, in the provider's order.
    public var addresses: [HTTPDNSIPAddress]
    /// Seconds this answer may still be used (30 for a stale answer, RFC 8767).
    public var ttl: Int
    /// The resolver that produced the addresses (its ``HTTPDNSResolver/name``).
    public var source: String
    /// Which kind of resolver produced the addresses.
    public var origin: Origin
    /// True when served from the cache.
    public var fromCache: Bool
    /// True when served after expiry because a refresh failed (RFC 8767 serve-stale).
    public var isStale: Bool
    /// True when served from an entry loaded from the persisted cache file, not yet confirmed by a
    /// lookup in this run (a background refresh has been started). Default false.
    public var fromDisk: Bool = false

    package init(
        host: String,
        addresses: [HTTPDNSIPAddress],
        ttl: Int,
        source: String,
        origin: Origin,
        fromCache: Bool = false,
        isStale: Bool = false
    ) {
        self.host = host
        self.addresses = addresses
        self.ttl = ttl
        self.source = source
        self.origin = origin
        self.fromCache = fromCache
        self.isStale = isStale
    }
}
