import DNSWire
@_spi(HTTPDNSPackage) import HTTPDNSCore

/// The stub's wire-answer cache for every query type, as a plain value: TTLs counting down, negative
/// caching (RFC 2308), serve-stale (RFC 8767) and an LRU size bound.
///
/// Every method takes `now` (seconds on any monotonic clock); the I/O shell wraps one of these in a
/// lock. Entries keep the upstream's records in order (a CNAME chain stays whole); the question and
/// header of an answer come from the request being answered, never from the cache, so a client's
/// name case is echoed as it asked (``DNSStubResponse/encode(for:maxUDPPayloadSize:)``).
package struct DNSStubCache: Sendable {
    /// Limits, each with its default, named as the engine's cache settings
    /// (``HTTPDNSCacheSettings``) name theirs.
    package struct Configuration: Sendable, Hashable {
        /// Most entries kept; the least recently used goes first beyond it. Default 10,000.
        package var capacity: Int = 10_000
        /// Longest a positive answer stays fresh. Default 1 day.
        package var maximumTTL: Duration = .seconds(86_400)
        /// Longest a negative answer stays fresh. Default 1 hour (RFC 2308 §5 suggests 1-3 hours;
        /// Unbound's cache-max-negative-ttl).
        package var maximumNegativeTTL: Duration = .seconds(3_600)
        /// Shortest a negative answer stays fresh, so that a zone with SOA MINIMUM 0 does not send
        /// every repeat upstream. Default 5 s.
        package var minimumNegativeTTL: Duration = .seconds(5)
        /// How long past expiry an answer may still be served, stale, when the upstream failed.
        /// Default 1 day (RFC 8767 §5: 1-3 days).
        package var maximumStaleAge: Duration = .seconds(86_400)
        /// TTL of the records of a stale answer. Default 30 s (RFC 8767 §4).
        package var staleTTL: Duration = .seconds(30)

        package init() {}

        /// Whole seconds of `duration` as a DNS TTL: rounded down, within 0...2^31-1 (RFC 2181 §8).
        static func ttl(_ duration: Duration) -> UInt32 {
            let seconds = duration.components.seconds
            return UInt32(min(max(seconds, 0), Int64(Int32.max)))
        }
    }

    /// What an entry is stored under: the question's name (ASCII case ignored, as ``DNSName``
    /// compares), type and class, and the DO and CD bits of the query that fetched it.
    ///
    /// DO changes the records (RRSIGs, NSECs); CD changes whether a validating upstream gives data
    /// that failed validation, which a client without CD must never get from the cache.
    package struct Key: Hashable, Sendable {
        package var name: DNSName
        /// Nil for an NXDOMAIN, which covers every type of the name (RFC 2308 §5).
        package var type: DNSRecordType?
        package var recordClass: DNSRecordClass
        package var dnssecOK: Bool
        package var checkingDisabled: Bool

        package init(name: DNSName, type: DNSRecordType?, recordClass: DNSRecordClass = .IN, dnssecOK: Bool = false, checkingDisabled: Bool = false) {
            self.name = name
            self.type = type
            self.recordClass = recordClass
            self.dnssecOK = dnssecOK
            self.checkingDisabled = checkingDisabled
        }

        /// The key of `request`'s own type.
        package init(_ request: DNSStubRequest) {
            self.init(
                name: request.question.name, type: request.question.type, recordClass: request.question.recordClass,
                dnssecOK: request.dnssecOK, checkingDisabled: request.checkingDisabled
            )
        }
    }

    /// An answer found.
    package struct Hit: Sendable, Hashable {
        /// The records with TTLs counted down (or ``Configuration/staleTTL`` when stale), for
        /// ``DNSStubResponse/encode(for:maxUDPPayloadSize:)``. A stale one carries EDE 3 Stale Answer
        /// (19 Stale NXDOMAIN Answer for an NXDOMAIN), RFC 8914 §4.4 and §4.20.
        package var response: DNSStubResponse
        /// Whole seconds the entry stays fresh; 0 when stale.
        package var remainingTTL: UInt32
        package var isStale: Bool
    }

    struct Entry: Sendable {
        var response: DNSStubResponse
        var storedAt: Double
        /// Seconds the entry is fresh, from ``cacheTTL(of:question:)``.
        var ttl: UInt32

        var expiresAt: Double { storedAt + Double(ttl) }
    }

    package let configuration: Configuration
    /// The entries, bounded by ``Configuration/capacity``.
    private var table: LRUTable<Key, Entry>

    package init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
        table = LRUTable(capacity: configuration.capacity)
    }

    /// The number of entries, stale ones included.
    package var count: Int { table.count }

    /// Stores an upstream's answer to `request` at `now`, if it may be cached (``cacheTTL(of:question:)``).
    ///
    /// An NXDOMAIN with no CNAME before it is stored for every type of the name. The answer's
    /// Extended DNS Error is not kept: it described that one exchange.
    ///
    /// - Returns: the seconds it stays fresh, nil when it was not stored.
    @discardableResult
    package mutating func store(_ response: DNSStubResponse, for request: DNSStubRequest, now: Double) -> UInt32? {
        guard let ttl = cacheTTL(of: response, question: request.question) else { return nil }
        var key = Key(request)
        if response.rcode == .nameError, response.answers.isEmpty {
            // The name is gone: an older answer of the type asked must not outlive it.
            remove(key)
            key.type = nil
        }
        var kept = response
        kept.extendedError = nil
        insert(key, Entry(response: kept, storedAt: now, ttl: ttl))
        return ttl
    }

    /// The answer to `request` at `now`: a fresh entry of its type, else a fresh NXDOMAIN of its
    /// name; when `upstreamFailed`, an expired one within ``Configuration/maximumStaleAge`` (RFC 8767 §4:
    /// stale data only after a failed attempt to refresh it). Entries past the stale window are
    /// removed.
    package mutating func lookup(_ request: DNSStubRequest, now: Double, upstreamFailed: Bool = false) -> Hit? {
        let exact = Key(request)
        var nameWide = exact
        nameWide.type = nil
        let keys = [exact, nameWide]
        for key in keys {
            guard let slot = table.slot(of: key) else { continue }
            let entry = table[slot]
            if now < entry.expiresAt {
                table.touch(slot)
                return fresh(entry, now: now)
            }
            if now - entry.expiresAt > maximumStaleAge { remove(key) }
        }
        guard upstreamFailed else { return nil }
        for key in keys {
            guard let slot = table.slot(of: key) else { continue }
            table.touch(slot)
            return stale(table[slot])
        }
        return nil
    }

    /// Seconds past expiry an entry may be served stale (``Configuration/maximumStaleAge``).
    var maximumStaleAge: Double { configuration.maximumStaleAge.inSeconds }

    /// Drops the entry under `key`.
    package mutating func remove(_ key: Key) {
        // The records go with the entry, not when the slot is reused.
        table.remove(key)
    }

    /// Drops every entry.
    package mutating func removeAll() {
        table.removeAll()
    }

    /// Every key, most recently used first.
    package var keys: [Key] {
        table.elements.map(\.key)
    }

    mutating func insert(_ key: Key, _ entry: Entry) {
        table.set(entry, forKey: key)
    }

    /// The entry under `key`, fresh or not, without making it recently used (for saving).
    func peek(_ key: Key) -> Entry? {
        table.peek(key)
    }
}
