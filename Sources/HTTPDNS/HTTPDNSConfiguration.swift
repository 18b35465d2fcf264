import HTTPDNSCore

/// Everything the engine needs, as plain values with documented defaults.
public struct HTTPDNSConfiguration: Sendable {
    /// Where lookups go when every HTTPDNS provider failed.
    public enum LocalDNS: Sendable {
        /// The system resolver (`getaddrinfo`), run off the cooperative pool. The default.
        case system
        /// Plain DNS over UDP (TCP on truncation) to a chosen server.
        case server(HTTPDNSIPAddress, port: UInt16)
        /// Any resolver, for tests or special set-ups.
        case custom(any HTTPDNSResolver)
    }

    /// Time limits.
    public struct Timeouts: Sendable, Hashable {
        /// One resolver's attempt. Default 1.5 s.
        public var perAttempt: Duration = .milliseconds(1500)
        /// All HTTPDNS providers together before LocalDNS is asked (vendors use about 2 s). Default 2 s.
        public var httpdnsBudget: Duration = .seconds(2)
        /// The LocalDNS fallback. Default 5 s.
        public var localDNS: Duration = .seconds(5)

        public init() {}
    }

    /// Failover between providers and addresses.
    public struct Failover: Sendable, Hashable {
        /// Never fall back to LocalDNS: fail instead. Default false.
        public var httpdnsOnly: Bool = false
        /// How long a failing provider is skipped (unless every provider is cooling down). Default 30 s.
        public var providerCooldown: Duration = .seconds(30)
        /// How long an address that refused a connection is moved to the back of answers. Default 60 s.
        public var addressCooldown: Duration = .seconds(60)

        public init() {}
    }

    /// Cache settings.
    public struct Cache: Sendable {
        /// TTL floor and ceiling, refresh point, serve-stale limits, capacity.
        public var policy: HTTPDNSCacheSettings = .init()
        /// A file the cache is saved to and loaded from (atomic replace); nil keeps it in memory. Default nil.
        public var persistencePath: String? = nil
        /// Changes are written at most this often (each write replaces the whole file). Default 2 s.
        public var persistenceInterval: Duration = .seconds(2)
        /// A secret of the app's: the cache file is then signed with HMAC-SHA256 under it, and a file
        /// without the matching signature (tampered with, or written without the key) is not loaded.
        /// Default nil: a SHA-256 checksum still rejects corruption, but not a deliberate edit.
        public var persistenceKey: [UInt8]? = nil
        /// Names resolved in the background when the engine starts. Default none.
        public var preResolve: [String] = []

        public init() {}
    }

    /// The resolvers asked first, in order: usually HTTPDNS providers (from ``HTTPDNSProviderSpec``), also any
    /// other ``HTTPDNSResolver`` (a plain DNS server, static entries).
    public var resolvers: [any HTTPDNSResolver]
    /// Certificate authorities trusted for HTTPS, to HTTPDNS providers and to origins alike (a
    /// provider built by hand may carry its own). Default: the system's.
    public var trust: HTTPDNSTrust = .system
    /// Fixed answers tried before anything else, like curl's `--resolve` or an app's pinned hosts:
    /// host → addresses, trusted as given (loopback and private space included), never cached.
    /// Default none.
    public var staticEntries: [String: [HTTPDNSIPAddress]] = [:]
    /// Hosts that go through HTTPDNS; ``HTTPDNSEngine/resolve(_:family:)`` answers the others from
    /// LocalDNS alone (what the system would have done). Default: every name.
    public var protectedHosts: HTTPDNSHostPolicy = .all
    /// The fallback. Default `.system`.
    public var localDNS: LocalDNS = .system
    /// Address family of lookups that do not say. Default `.ipv4`.
    public var family: HTTPDNSAddressFamily = .ipv4
    /// Which addresses from HTTPDNS are acceptable. Default: no loopback, no private space.
    public var hygiene: HTTPDNSAnswerHygiene = .init()
    public var timeouts: Timeouts = .init()
    public var failover: Failover = .init()
    public var cache: Cache = .init()
    /// Receives events; the default ignores them.
    public var monitor: any HTTPDNSEventMonitor = HTTPDNSNoEventMonitor()
    /// Time source; tests inject ``HTTPDNSManualClock``.
    public var clock: any HTTPDNSClock = HTTPDNSSystemClock()

    public init(resolvers: [any HTTPDNSResolver]) {
        self.resolvers = resolvers
    }
}

extension Duration {
    /// The duration in seconds, for the engine's clock arithmetic (``HTTPDNSClock`` counts seconds).
    package var inSeconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
