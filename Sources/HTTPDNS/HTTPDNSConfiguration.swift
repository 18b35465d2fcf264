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
        /// Optimistic mode (Alibaba's and Tencent's "expired IP enabled", RFC 8767 section 5): an
        /// answer that expired at most this long ago is served at once, marked stale, while a
        /// background refresh replaces it; older answers wait for upstream as usual. `nil` turns the
        /// mode off: an expired answer waits for the refresh (up to the HTTPDNS budget) and is served
        /// stale only if the refresh fails. Default `nil`.
        public var optimisticMaximumStaleness: Duration? = nil
        /// Chooses the TTL of a host's answers (Alibaba's `HttpdnsTTLDelegate`): called with the host
        /// and the TTL the engine would use (the provider's, within ``HTTPDNSCacheSettings``'
        /// floor and ceiling); the answer is cached for the returned TTL, kept within 1 s and the
        /// ceiling. Called on the thread that stores the answer: keep it quick. Default `nil` (the
        /// engine's TTL).
        public var ttlPolicy: (@Sendable (_ host: String, _ proposedTTL: Duration) -> Duration)? = nil

        public init() {}
    }

    /// What happens when the device moves between networks (Wi-Fi, cellular, VPN).
    public struct Network: Sendable, Hashable {
        /// On ``HTTPDNSEngine/networkDidChange()``, keep the cached answers as a last resort: they are
        /// marked expired, so every lookup asks upstream again, but an answer is still served stale if
        /// HTTPDNS and LocalDNS both fail on the new network (within
        /// ``HTTPDNSCacheSettings/maximumStaleAge``). With false they are dropped. Default true.
        public var keepsStaleAnswersOnChange: Bool = true
        /// On a network change, resolve ``Cache/preResolve`` again (Alibaba's
        /// `setPreResolveAfterNetworkChanged`). Default true.
        public var preResolvesOnChange: Bool = true
        /// Watch the system for network changes and call ``HTTPDNSEngine/networkDidChange()`` by itself
        /// (Linux: an rtnetlink socket, see ``HTTPDNSNetworkWatcher``; elsewhere nothing happens: the
        /// app calls it from its own reachability callback). Default false.
        public var watchesChanges: Bool = false
        /// A burst of address and route events (an interface coming up brings several) counts as one
        /// change once it has been quiet this long. Default 500 ms.
        public var changeDebounce: Duration = .milliseconds(500)

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
    /// Address family of lookups that do not say. Default `.ipv4`. With `.auto` the engine asks for
    /// the families the network has a route for and, on an IPv6-only network with NAT64, synthesizes
    /// IPv6 addresses from IPv4 answers (see ``HTTPDNSAddressFamily/auto``).
    public var family: HTTPDNSAddressFamily = .ipv4
    /// Which addresses from HTTPDNS are acceptable. Default: no loopback, no private space.
    public var hygiene: HTTPDNSAnswerHygiene = .init()
    public var timeouts: Timeouts = .init()
    public var failover: Failover = .init()
    public var cache: Cache = .init()
    public var network: Network = .init()
    /// Receives events; the default ignores them.
    public var monitor: any HTTPDNSEventMonitor = HTTPDNSNoEventMonitor()
    /// Time source; tests inject a clock they move by hand.
    public var clock: any HTTPDNSClock = HTTPDNSSystemClock()
    /// Replaces the route probe behind ``HTTPDNSAddressFamily/auto`` (which families have a route);
    /// for tests. Default nil: ask the kernel.
    package var familyProbe: (@Sendable () -> (ipv4: Bool, ipv6: Bool))? = nil

    public init(resolvers: [any HTTPDNSResolver]) {
        self.resolvers = resolvers
    }
}
