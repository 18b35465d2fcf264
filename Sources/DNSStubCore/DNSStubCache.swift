import DNSWire

/// The stub's wire-answer cache for every query type, as a plain value: TTLs counting down, negative
/// caching (RFC 2308), serve-stale (RFC 8767) and an LRU size bound.
///
/// Every method takes `now` (seconds on any monotonic clock); the I/O shell wraps one of these in a
/// lock. Entries keep the upstream's records in order (a CNAME chain stays whole); the question and
/// header of an answer come from the request being answered, never from the cache, so a client's
/// name case is echoed as it asked (``DNSStubResponse/encode(for:maxUDPPayloadSize:)``).
package struct DNSStubCache: Sendable {
    /// Limits, each with its default.
    package struct Configuration: Sendable, Hashable {
        /// Most entries kept; the least recently used goes first beyond it. Default 10,000.
        package var maxEntries: Int = 10_000
        /// Longest a positive answer stays fresh, seconds. Default 86,400 (1 day).
        package var maxTTL: UInt32 = 86_400
        /// Longest a negative answer stays fresh, seconds. Default 3,600 (RFC 2308 §5 suggests 1-3
        /// hours; Unbound's cache-max-negative-ttl).
        package var maxNegativeTTL: UInt32 = 3_600
        /// Shortest a negative answer stays fresh, seconds, so that a zone with SOA MINIMUM 0 does not
        /// send every repeat upstream. Default 5.
        package var minNegativeTTL: UInt32 = 5
        /// How long past expiry an answer may still be served, stale, when the upstream failed,
        /// seconds. Default 86,400 (RFC 8767 §5: 1-3 days).
        package var staleWindow: Double = 86_400
        /// TTL of the records of a stale answer, seconds. Default 30 (RFC 8767 §4).
        package var staleTTL: UInt32 = 30

        package init() {}
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

    private struct Node: Sendable {
        var key: Key
        var entry: Entry
        var previous: Int
        var next: Int
    }

    package let configuration: Configuration
    private var index: [Key: Int] = [:]
    private var nodes: [Node] = []
    private var freeSlots: [Int] = []
    private var head = -1  // most recently used
    private var tail = -1  // least recently used

    package init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
    }

    /// The number of entries, stale ones included.
    package var count: Int { index.count }

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
    /// name; when `upstreamFailed`, an expired one within ``Configuration/staleWindow`` (RFC 8767 §4:
    /// stale data only after a failed attempt to refresh it). Entries past the stale window are
    /// removed.
    package mutating func lookup(_ request: DNSStubRequest, now: Double, upstreamFailed: Bool = false) -> Hit? {
        let exact = Key(request)
        var nameWide = exact
        nameWide.type = nil
        let keys = [exact, nameWide]
        for key in keys {
            guard let slot = index[key] else { continue }
            let entry = nodes[slot].entry
            if now < entry.expiresAt {
                touch(slot)
                return fresh(entry, now: now)
            }
            if now - entry.expiresAt > configuration.staleWindow { remove(key) }
        }
        guard upstreamFailed else { return nil }
        for key in keys {
            guard let slot = index[key] else { continue }
            touch(slot)
            return stale(nodes[slot].entry)
        }
        return nil
    }

    /// Drops the entry under `key`.
    package mutating func remove(_ key: Key) {
        guard let slot = index.removeValue(forKey: key) else { return }
        unlink(slot)
        freeSlots.append(slot)
        // Release the records now rather than when the slot is reused.
        nodes[slot].entry.response = DNSStubResponse()
    }

    /// Drops every entry.
    package mutating func removeAll() {
        index.removeAll()
        nodes.removeAll()
        freeSlots.removeAll()
        head = -1
        tail = -1
    }

    /// Every key, most recently used first.
    package var keys: [Key] {
        var result: [Key] = []
        result.reserveCapacity(index.count)
        var slot = head
        while slot >= 0 {
            result.append(nodes[slot].key)
            slot = nodes[slot].next
        }
        return result
    }

    mutating func insert(_ key: Key, _ entry: Entry) {
        if let slot = index[key] {
            nodes[slot].entry = entry
            touch(slot)
            return
        }
        let node = Node(key: key, entry: entry, previous: -1, next: head)
        let slot: Int
        if let free = freeSlots.popLast() {
            nodes[free] = node
            slot = free
        } else {
            nodes.append(node)
            slot = nodes.count - 1
        }
        if head >= 0 { nodes[head].previous = slot }
        head = slot
        if tail < 0 { tail = slot }
        index[key] = slot
        while index.count > max(configuration.maxEntries, 1) {
            remove(nodes[tail].key)
        }
    }

    /// The entry under `key`, fresh or not, without making it recently used (for saving).
    func peek(_ key: Key) -> Entry? {
        index[key].map { nodes[$0].entry }
    }

    private mutating func touch(_ slot: Int) {
        guard slot != head else { return }
        unlink(slot)
        nodes[slot].previous = -1
        nodes[slot].next = head
        if head >= 0 { nodes[head].previous = slot }
        head = slot
        if tail < 0 { tail = slot }
    }

    private mutating func unlink(_ slot: Int) {
        let previous = nodes[slot].previous
        let next = nodes[slot].next
        if previous >= 0 { nodes[previous].next = next } else if head == slot { head = next }
        if next >= 0 { nodes[next].previous = previous } else if tail == slot { tail = previous }
        nodes[slot].previous = -1
        nodes[slot].next = -1
    }
}
