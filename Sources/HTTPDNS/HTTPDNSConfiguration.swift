import HTTPDNSCore

/// Everything the engine needs, as plain values with documented defaults.
public struct HTTPDNSConfiguration: Sendable {
    /// Where lookups go when every HTTPDNS provider failed.
    public enum LocalDNS: Sendable {
        /// The system resolver (`getaddrinfo`), run off the cooperative pool. The default.
        case system
        /// Plain DNS over UDP (TCP on truncation) to a chosen server.
        case server(IPAddress, port: UInt16)
        /// Any resolver, for tests or special set-ups.
        case custom(any HTTPDNSResolver)
    }

    /// Time limits, in seconds.
    public struct Timeouts: Sendable, Hashable {
        /// One provider's attempt. Default 1.5.
        public var perAttempt: Double = 1.5
        /// All HTTPDNS providers together before LocalDNS is asked (vendors use about 2 s). Default 2.
        public var httpdnsBudget: Double = 2
        /// The LocalDNS fallback. Default 5.
        public var localDNS: Double = 5

        public init() {}
    }

    /// Failover between providers and addresses.
    public struct Failover: Sendable, Hashable {
        /// Never fall back to LocalDNS: fail instead. Default false.
        public var httpdnsOnly: Bool = false
        /// How long a failing provider is skipped (unless every provider is cooling down). Default 30 s.
        public var providerCooldown: Double = 30
        /// How long an address that refused a connection is moved to the back of answers. Default 60 s.
        public var addressCooldown: Double = 60

        public init() {}
    }

    /// Cache settings.
    public struct Cache: Sendable {
        /// TTL floor and ceiling, refresh point, serve-stale limits, capacity.
        public var policy: HTTPDNSCachePolicy.Settings = .init()
        /// A file the cache is saved to and loaded from (atomic replace); nil keeps it in memory. Default nil.
        public var persistencePath: String? = nil
        /// Changes are written at most this often (seconds; each write replaces the whole file). Default 2.
        public var persistenceInterval: Double = 2
        /// A secret of the app's: the cache file is then signed with HMAC-SHA256 under it, and a file
        /// without the matching signature (tampered with, or written without the key) is not loaded.
        /// Default nil: a SHA-256 checksum still rejects corruption, but not a deliberate edit.
        public var persistenceKey: [UInt8]? = nil
        /// Names resolved in the background when the engine starts. Default none.
        public var preResolve: [String] = []

        public init() {}
    }

    /// HTTPDNS providers, tried in order.
    public var providers: [any HTTPDNSResolver]
    /// Hosts that go through HTTPDNS. Default: every name.
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

    public init(providers: [any HTTPDNSResolver]) {
        self.providers = providers
    }
}
