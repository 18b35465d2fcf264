import HTTPDNSCore
/// The stub's per-client rate limit: a token bucket per client in a fixed-size table, as a value
/// with an explicit `now` (seconds on a monotonic clock); the server keeps one behind a lock.
///
/// A client is an IPv4 address (/32) or an IPv6 /64: a host can take any address of its /64
/// (privacy addresses, RFC 8981), so a finer key would let one host pass the limit by changing
/// address; hosts of one LAN sharing a /64 share its bucket too (raise the limit for such a LAN).
///
/// Memory is bounded whatever the number of sources: the table has ``Configuration/slots``
/// entries, a client's slot is a hash of its key (seeded per process, so sources cannot be chosen
/// to collide), and a newcomer takes the slot over with a full bucket. Spoofed sources therefore
/// cost nothing but can reset a busy client's bucket: the table errs towards answering.
///
/// Over the limit, the server drops a UDP query, except every ``Configuration/slip``-th, answered
/// empty with TC=1 so that a real client behind a spoofed flood still gets through over TCP
/// (BIND's Response Rate Limiting "slip", default 2); over TCP, where the source cannot be
/// spoofed, the answer is REFUSED.
package struct DNSStubRateLimiter: Sendable {
    /// Settings, each with its default.
    package struct Configuration: Sendable, Hashable {
        /// Queries per second per client outside loopback (the `--allow-from` clients), and the burst
        /// (a full bucket holds one second's worth); 0 is no limit. Default 1,000: far above what one
        /// host's resolver asks, low enough to bound a reflection through the stub.
        package var queriesPerSecond: Int = 1000
        /// The same for loopback clients, the host's own programs; default 0, no limit: a limit that
        /// broke a busy host's own lookups would be worse than the abuse it prevents, and loopback
        /// sources cannot be spoofed from outside.
        package var loopbackQueriesPerSecond: Int = 0
        /// Every `slip`-th UDP query over the limit is answered with TC=1 (0: every one dropped, 1:
        /// every one truncated). Default 2, as BIND's RRL.
        package var slip: Int = 2
        /// Clients tracked at once (table size). Default 4,096, about 160 KiB.
        package var slots: Int = 4096

        package init() {}
    }

    /// What to do with one query.
    package enum Decision: Sendable, Hashable {
        case answer
        /// Over the limit: send nothing.
        case drop
        /// Over the limit: answer empty with TC=1 (UDP), the client retries over TCP.
        case slip
    }

    private struct Key: Hashable {
        var bits: UInt64
        var isV6: Bool
    }

    private struct Bucket {
        var key: Key
        var tokens: Double
        var last: Double
        var limited: UInt64
    }

    package let configuration: Configuration
    private var table: [Bucket?]

    package init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
        table = configuration.isOff ? [] : [Bucket?](repeating: nil, count: max(1, configuration.slots))
    }

    /// Slots in the table, fixed at creation (0 when off).
    package var tableSize: Int { table.count }

    /// Whether no client is limited (then ``admit(_:transport:now:)`` always answers).
    package var isOff: Bool { configuration.isOff }

    /// The table slot `client`'s bucket lives in (nil when off). Two clients that share a slot take it
    /// from each other, each arriving to a full bucket; tests ask this to keep their clients apart.
    package func slot(for client: HTTPDNSIPAddress) -> Int? {
        table.isEmpty ? nil : slot(Self.key(client.ipv4Mapped ?? client))
    }

    private static func key(_ address: HTTPDNSIPAddress) -> Key {
        Key(bits: address.words.high, isV6: address.family == .v6)
    }

    private func slot(_ key: Key) -> Int {
        var hasher = Hasher()
        hasher.combine(key)
        return Int(UInt(bitPattern: hasher.finalize()) % UInt(table.count))
    }

    /// Takes one token from `client`'s bucket.
    /// - Parameter transport: `.slip` is for UDP only; over TCP a query over the limit is `.drop`,
    ///   which the server answers REFUSED (a TCP source is not spoofed, and TC means nothing there).
    package mutating func admit(_ client: HTTPDNSIPAddress, transport: DNSStubTransport = .udp, now: Double) -> Decision {
        let address = client.ipv4Mapped ?? client
        let rate = Double(configuration.queriesPerSecond(for: address))
        guard rate > 0 else { return .answer }
        let key = Self.key(address)
        let slot = slot(key)
        var bucket = table[slot].flatMap { $0.key == key ? $0 : nil } ?? Bucket(key: key, tokens: rate, last: now, limited: 0)
        bucket.tokens = min(rate, bucket.tokens + max(0, now - bucket.last) * rate)
        bucket.last = max(bucket.last, now)
        defer { table[slot] = bucket }
        if bucket.tokens >= 1 {
            bucket.tokens -= 1
            return .answer
        }
        bucket.limited &+= 1
        guard transport == .udp, configuration.slip > 0, bucket.limited % UInt64(configuration.slip) == 0 else { return .drop }
        return .slip
    }
}

extension DNSStubRateLimiter.Configuration {
    package var isOff: Bool { queriesPerSecond <= 0 && loopbackQueriesPerSecond <= 0 }

    /// The limit that applies to `client` (0: none); the server asks it before taking the lock, so
    /// that unlimited clients (loopback, by default) never wait for it.
    package func queriesPerSecond(for client: HTTPDNSIPAddress) -> Int {
        max(0, (client.ipv4Mapped ?? client).isLoopback ? loopbackQueriesPerSecond : queriesPerSecond)
    }
}
