/// The cache key: one entry per host and address family (and, for a server sending EDNS Client
/// Subnet upstream, per client subnet).
///
/// The subnet is kept packed in one word (``HTTPDNSClientSubnet/packed``): a key is stored twice per
/// cached host (the index and the recency list), and an optional subnet value in it grew every
/// cached host by about 115 bytes (bench row 7b) and every cache hit by a copy through its value
/// witness (row 1a).
@usableFromInline
package struct HTTPDNSCacheKey: Hashable, Sendable, Codable {
    package var host: String
    /// ``clientSubnet`` packed; 0 for none.
    private var packedSubnet: UInt64 = 0
    package var family: HTTPDNSAddressFamily

    /// The client subnet the answer was asked for (RFC 7871), nil for the usual client-side cache.
    /// Answers for different subnets may differ, so they are kept apart (RFC 7871 §7.3.1 allows a
    /// coarser scope; keeping the source prefix is never wrong).
    package var clientSubnet: HTTPDNSClientSubnet? {
        get { HTTPDNSClientSubnet(packed: packedSubnet) }
        set { packedSubnet = newValue?.packed ?? 0 }
    }

    package init(host: String, family: HTTPDNSAddressFamily) {
        self.host = host
        self.family = family
    }

    package init(host: String, family: HTTPDNSAddressFamily, clientSubnet: HTTPDNSClientSubnet?) {
        self.host = host
        self.family = family
        self.packedSubnet = clientSubnet?.packed ?? 0
    }

    // Hand-written: only the host is hashed (the family, at most three values per host, is left to
    // equality), which keeps a cache hit to one string hash.
    @usableFromInline
    package func hash(into hasher: inout Hasher) {
        hasher.combine(host)
    }

    private enum CodingKeys: String, CodingKey {
        case host, family, clientSubnet
    }

    // The members a key has always been written with (the cache file), the subnet as a value.
    @usableFromInline
    package init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        host = try container.decode(String.self, forKey: .host)
        family = try container.decode(HTTPDNSAddressFamily.self, forKey: .family)
        if let subnet = try container.decodeIfPresent(HTTPDNSClientSubnet.self, forKey: .clientSubnet) {
            // A cache file is untrusted: only a subnet the service could have made packs faithfully.
            guard subnet.isPackable else {
                throw DecodingError.dataCorruptedError(
                    forKey: .clientSubnet, in: container, debugDescription: "not a client subnet: \(subnet)")
            }
            packedSubnet = subnet.packed
        }
    }

    @usableFromInline
    package func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(host, forKey: .host)
        try container.encode(family, forKey: .family)
        try container.encodeIfPresent(clientSubnet, forKey: .clientSubnet)
    }
}

/// One cached answer.
package struct HTTPDNSCacheEntry: Sendable, Hashable, Codable {
    package var addresses: [HTTPDNSIPAddress]
    package var source: String
    package var origin: HTTPDNSAnswer.Origin
    /// When the answer was stored (seconds since 1970).
    package var storedAt: Double
    /// The TTL after the floor and ceiling were applied.
    package var ttl: Int
    /// Until when an expired entry is served stale without asking upstream again (after a failed refresh).
    package var staleUntil: Double?
    /// No refresh is attempted before this time (set after a failed refresh, RFC 8767 retry interval).
    package var nextRefreshAt: Double?
    /// Loaded from the persisted cache file rather than answered in this run: served, refreshed in
    /// the background right after the load, and again at a use while that refresh has not replaced
    /// it. Default false.
    package var fromDisk: Bool = false

    package init(addresses: [HTTPDNSIPAddress], source: String, origin: HTTPDNSAnswer.Origin, storedAt: Double, ttl: Int) {
        self.addresses = addresses
        self.source = source
        self.origin = origin
        self.storedAt = storedAt
        self.ttl = ttl
    }

    /// When the entry stops being fresh.
    package var expiresAt: Double { storedAt + Double(ttl) }
}

/// Cache rules as a plain value: TTL floor and ceiling, refresh at 75 %, serve-stale (RFC 8767) and an
/// LRU size bound. Every method takes `now` explicitly; the engine wraps one of these in a lock.
package struct HTTPDNSCachePolicy: Sendable {
    /// Tunables: ``HTTPDNSCacheSettings``.
    package typealias Settings = HTTPDNSCacheSettings

    /// What a lookup found.
    package enum Lookup: Sendable, Hashable {
        /// A fresh entry, its remaining TTL, and whether it is time to refresh it in the background.
        case fresh(HTTPDNSCacheEntry, remainingTTL: Int, shouldRefresh: Bool)
        /// An expired entry whose refresh failed recently: serve it stale without asking upstream.
        case stale(HTTPDNSCacheEntry)
        /// An expired entry still young enough to serve stale if a refresh fails.
        case expired(HTTPDNSCacheEntry)
        /// Nothing usable.
        case miss
    }

    package let settings: Settings
    /// The entries, bounded by ``HTTPDNSCacheSettings/capacity``.
    private var table: LRUTable<HTTPDNSCacheKey, HTTPDNSCacheEntry>

    package init(settings: Settings = Settings()) {
        self.settings = settings
        table = LRUTable(capacity: settings.capacity)
    }

    /// The number of entries.
    package var count: Int { table.count }

    /// Clamps a provider TTL to the floor and ceiling.
    package func effectiveTTL(_ ttl: Int?) -> Int {
        let value = ttl ?? settings.defaultTTL
        return min(max(value, settings.minimumTTL), max(settings.maximumTTL, settings.minimumTTL))
    }

    /// Looks `key` up at `now` and marks it recently used.
    package mutating func lookup(_ key: HTTPDNSCacheKey, now: Double) -> Lookup {
        guard let slot = table.slot(of: key) else { return .miss }
        table.touch(slot)
        let entry = table[slot]
        if now < entry.expiresAt {
            let refreshAt = entry.storedAt + Double(entry.ttl) * settings.refreshFraction
            let allowed = entry.nextRefreshAt.map { now >= $0 } ?? true
            let remaining = Self.remainingSeconds(entry.expiresAt - now)
            return .fresh(entry, remainingTTL: remaining, shouldRefresh: (now >= refreshAt || entry.fromDisk) && allowed)
        }
        if now - entry.expiresAt > Double(settings.maximumStaleAge) {
            remove(key)
            return .miss
        }
        if let staleUntil = entry.staleUntil, now < staleUntil {
            return .stale(entry)
        }
        return .expired(entry)
    }

    /// Whole seconds left of `interval`, rounded up, at least 1 and at most
    /// ``HTTPDNSFormatLimits/maxTTL``; safe for any value (NaN, infinities, years): whatever an entry
    /// holds, a lookup never traps on the conversion to `Int`.
    package static func remainingSeconds(_ interval: Double) -> Int {
        guard interval > 1 else { return 1 }  // also NaN
        guard interval < Double(HTTPDNSFormatLimits.maxTTL) else { return HTTPDNSFormatLimits.maxTTL }
        return Int(interval.rounded(.up))
    }

    /// Reads an entry without touching the LRU order or expiring anything.
    package func peek(_ key: HTTPDNSCacheKey) -> HTTPDNSCacheEntry? {
        table.peek(key)
    }

    /// Stores a fresh answer; evicts the least recently used entry beyond the capacity.
    @discardableResult
    package mutating func store(
        _ key: HTTPDNSCacheKey,
        addresses: [HTTPDNSIPAddress],
        ttl: Int?,
        source: String,
        origin: HTTPDNSAnswer.Origin,
        now: Double
    ) -> HTTPDNSCacheEntry {
        let entry = HTTPDNSCacheEntry(
            addresses: addresses, source: source, origin: origin, storedAt: now, ttl: effectiveTTL(ttl))
        insert(key, entry)
        return entry
    }

    /// Puts a ready entry in (used when loading a persisted cache); a TTL outside 0...2^31-1 is
    /// stored as 0 (RFC 2181 §8).
    package mutating func insert(_ key: HTTPDNSCacheKey, _ entry: HTTPDNSCacheEntry) {
        var entry = entry
        if !(0...HTTPDNSFormatLimits.maxTTL).contains(entry.ttl) { entry.ttl = 0 }
        table.set(entry, forKey: key)
    }

    /// Records a failed refresh at `now`: an expired entry is then served stale for ``Settings/staleTTL``
    /// seconds, and no refresh is tried again before that.
    /// - Returns: the entry to serve stale, if it is expired but within the maximum stale age.
    package mutating func refreshFailed(_ key: HTTPDNSCacheKey, now: Double) -> HTTPDNSCacheEntry? {
        guard let slot = table.slot(of: key) else { return nil }
        let retryAt = now + Double(settings.staleTTL)
        table[slot].nextRefreshAt = retryAt
        let entry = table[slot]
        guard now >= entry.expiresAt else { return nil }
        guard now - entry.expiresAt <= Double(settings.maximumStaleAge) else {
            remove(key)
            return nil
        }
        table[slot].staleUntil = retryAt
        return table[slot]
    }

    /// Drops an entry (for example after HTTP 401 from the provider, or a certificate failure).
    package mutating func remove(_ key: HTTPDNSCacheKey) {
        table.remove(key)
    }

    /// Drops every entry.
    package mutating func removeAll() {
        table.removeAll()
    }

    /// Every entry, most recently used first.
    package var entries: [(key: HTTPDNSCacheKey, entry: HTTPDNSCacheEntry)] {
        table.elements.map { ($0.key, $0.value) }
    }
}
