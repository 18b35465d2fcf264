import HTTPDNSCore
import Synchronization

/// The resolution engine: "which addresses should this request go to?", without trusting the local
/// resolver.
///
/// A lookup is answered from the cache when fresh; otherwise the HTTPDNS providers are asked in order
/// (skipping ones cooling down after failures) within a time budget, their answers cleaned of bogons
/// and duplicates, and only then LocalDNS (unless the configuration is HTTPDNS-only). Concurrent
/// lookups of one name share one upstream request. The cache refreshes in the background at 75 % of
/// the TTL and serves a stale answer only when a refresh fails (RFC 8767), or at once in optimistic
/// mode. ``networkDidChange()`` starts over on a new network.
public final class HTTPDNSEngine: Sendable {
    struct State: Sendable {
        var cache: HTTPDNSCachePolicy
        var inFlight: [HTTPDNSCacheKey: HTTPDNSFlight] = [:]
        var providerCooldown: [String: Double] = [:]
        var addressCooldown: [HTTPDNSIPAddress: Double] = [:]
        /// Connect times per address (``connectOrder(_:unknown:)``).
        var ranking = HTTPDNSAddressRanking()
        var upstreamLookups = 0
        /// Entries loaded from the cache file that a batch refresh is asking for
        /// (``refreshLoaded(_:)``): a use of them starts no refresh of its own meanwhile.
        var diskRefreshing: Set<HTTPDNSCacheKey> = []
        /// Bumped by ``networkDidChange()``: work started on an earlier network stores nothing.
        var networkEpoch: UInt64 = 0
        /// Entries kept from the previous network (``HTTPDNSConfiguration/Network/keepsStaleAnswersOnChange``):
        /// served only as a last resort, never optimistically; a key leaves when it is stored anew.
        var previousNetwork: Set<HTTPDNSCacheKey> = []
        /// The NAT64 prefix of an IPv6-only network, once discovered (``HTTPDNSAddressFamily/auto``).
        var nat64Prefix: HTTPDNSNAT64Prefix?
        /// The discovery running now; `.both` lookups wait for it so as not to cache IPv4 answers
        /// that cannot be reached.
        var nat64Discovery: Task<Void, Never>?
    }

    /// The configuration the engine was made with.
    public let configuration: HTTPDNSConfiguration
    // Copies of the configuration's hot fields, read on every cache hit.
    let clock: any HTTPDNSClock
    let monitor: any HTTPDNSEventMonitor
    let defaultFamily: HTTPDNSAddressFamily
    /// ``HTTPDNSConfiguration/Cache/optimisticMaximumStaleness`` in seconds.
    let optimisticStaleness: Double?
    /// What ``HTTPDNSAddressFamily/auto`` means on the current network (``FamilyCode``).
    let autoFamily = Atomic<UInt8>(FamilyCode.both)
    let state: HTTPDNSLock<State>
    /// The hosts requests go through the engine for; replaced by ``updatePolicy(_:)``.
    let policy: HTTPDNSLock<HTTPDNSHostPolicy>
    /// The rtnetlink watcher when ``HTTPDNSConfiguration/Network/watchesChanges`` is set.
    let watcher = HTTPDNSLock<HTTPDNSNetworkWatcher?>(nil)
    let localResolver: (any HTTPDNSResolver)?
    /// ``HTTPDNSConfiguration/staticEntries`` under normalised names.
    let staticEntries: [String: [HTTPDNSIPAddress]]
    let persistence: HTTPDNSCachePersistence?
    /// This engine's name in the per-thread hit memos (``HTTPDNSHitMemo``); never reused.
    let serial: UInt64
    /// Bumped under the lock by every change that can alter an answer (see ``change(_:)``).
    let generation = Atomic<UInt64>(0)
    /// Whether any provider has a cool-down entry (`State.providerCooldown` is not empty); set under
    /// the lock with every change of it, read without: a lookup while nothing cools takes the
    /// configured order without the lock, and a success has no entry to clear.
    let providersCooling = Atomic<Bool>(false)
    /// Whether any address has a cool-down entry (`State.addressCooldown` is not empty); set under
    /// the lock, read without: while none does, an answer's order needs no look at the lock.
    let addressesCooling = Atomic<Bool>(false)
    /// The first configured resolver when it is an HTTP service (the usual case): a lookup while
    /// no provider cools sends its request without asking the resolver's type again.
    let leadingProvider: HTTPDNSProvider?

    /// Creates an engine; starts loading a persisted cache and pre-resolution when configured.
    ///
    /// The persisted cache is read in the background (lookups made before it is in go upstream);
    /// its entries are served marked ``HTTPDNSAnswer/fromDisk`` and, once the file is in, all refreshed
    /// in the background (in batches where a provider has a batch form, a few requests at a time).
    public init(configuration: HTTPDNSConfiguration) {
        var configuration = configuration
        configuration.resolvers = configuration.resolvers.map { HTTPDNSEngine.trusting(configuration.trust, $0) }
        if case .custom(let resolver) = configuration.localDNS {
            configuration.localDNS = .custom(HTTPDNSEngine.trusting(configuration.trust, resolver))
        }
        self.configuration = configuration
        self.clock = configuration.clock
        self.monitor = configuration.monitor
        self.defaultFamily = configuration.family
        self.optimisticStaleness = configuration.cache.optimisticMaximumStaleness?.inSeconds
        self.persistence = configuration.cache.persistencePath.map {
            HTTPDNSCachePersistence(
                path: $0, interval: configuration.cache.persistenceInterval.inSeconds,
                key: configuration.cache.persistenceKey, monitor: configuration.monitor)
        }
        self.state = HTTPDNSLock(State(cache: HTTPDNSCachePolicy(settings: configuration.cache.policy)))
        self.policy = HTTPDNSLock(configuration.protectedHosts)
        self.serial = engineSerials.withLock { serial in
            serial += 1
            return serial
        }
        self.localResolver = HTTPDNSEngine.makeLocalResolver(configuration)
        self.leadingProvider = configuration.resolvers.first as? HTTPDNSProvider
        self.staticEntries = configuration.staticEntries.reduce(into: [:]) { table, entry in
            table[HTTPDNSHostPolicy.normalize(entry.key), default: []].append(contentsOf: entry.value)
        }
        persistence?.loadInBackground(into: self)
        let discovery = detectNetwork()
        let names = configuration.cache.preResolve
        if !names.isEmpty {
            Task { [self] in
                await discovery?.value
                await self.preResolve(names)
            }
        }
        if configuration.network.watchesChanges { startWatching() }
    }

    deinit {
        watcher.withLock { $0?.stop() }
    }

    /// `resolver` with the engine's trust where it is an HTTPDNS provider without one of its own.
    package static func trusting(_ trust: HTTPDNSTrust, _ resolver: any HTTPDNSResolver) -> any HTTPDNSResolver {
        (resolver as? HTTPDNSProvider)?.trusting(trust) ?? resolver
    }

    /// How many lookups went upstream (to providers or LocalDNS) so far; for tests and benchmarks.
    public var upstreamLookupCount: Int {
        state.withLock { $0.upstreamLookups }
    }

    /// Entries in the engine's cache now, stale ones included; for the stub's status page.
    package var cacheEntryCount: Int {
        state.withLock { $0.cache.count }
    }

    /// Callers waiting on upstream lookups right now, across every name; for tests that must know
    /// a caller has joined a shared lookup before they let it finish.
    package var flightWaiterCount: Int {
        state.withLock { $0.inFlight.values.reduce(0) { $0 + $1.waiterCount } }
    }

    /// Resolves `host` to the addresses a request should go to, in order.
    ///
    /// - Parameters:
    ///   - host: a DNS name; IP literals are returned as they are, without any lookup.
    ///   - family: address family; defaults to the configuration's.
    /// - Throws: ``HTTPDNSError``; `.allAttemptsFailed` lists every provider's failure.
    // Inlinable so that a cache hit costs the caller a plain function call, not an async frame; the
    // miss path stays out of line.
    @inlinable
    public func resolve(_ host: String, family: HTTPDNSAddressFamily? = nil) async throws -> HTTPDNSAnswer {
        switch lookupCache(host, family: family) {
        case .hit(let answer):
            return answer
        case .miss(let key, let staleFallback):
            return try await resolveMiss(key, original: host, family: family, staleFallback: staleFallback)
        }
    }

    /// Resolves `host` for a client in `clientSubnet`: the subnet is sent to DNS upstreams as EDNS
    /// Client Subnet (RFC 7871) and the answer is cached for that subnet alone. With `nil`, the same
    /// as ``resolve(_:family:)``. For the server, which answers many clients.
    package func resolve(
        _ host: String, family: HTTPDNSAddressFamily, clientSubnet: HTTPDNSClientSubnet?
    ) async throws -> HTTPDNSAnswer {
        let key = HTTPDNSCacheKey(
            host: HTTPDNSHostPolicy.normalize(host), family: concreteFamily(family), clientSubnet: clientSubnet)
        switch lookupCache(key) {
        case .hit(let answer):
            return answer
        case .miss(let key, let staleFallback):
            return try await resolveMiss(key, original: host, family: family, staleFallback: staleFallback)
        }
    }

    /// The synchronous half of ``resolve(_:family:)``.
    @usableFromInline
    enum CacheOutcome {
        case hit(HTTPDNSAnswer)
        case miss(HTTPDNSCacheKey, staleFallback: Bool)
    }

    /// Answers from the cache (reporting the hit, starting a refresh when due) or says what to ask.
    ///
    /// This thread's memo is asked first, by `host` as the caller spelled it: a repeated hit then
    /// neither normalises the name nor takes the lock.
    @usableFromInline
    func lookupCache(_ host: String, family: HTTPDNSAddressFamily?) -> CacheOutcome {
        let family = concreteFamily(family)
        if let answer = memoAnswer(host, family: family) {
            monitor.cacheHit(host: answer.host, family: family)
            return .hit(answer)
        }
        return lookupCache(HTTPDNSCacheKey(host: HTTPDNSHostPolicy.normalize(host), family: family), asked: host)
    }

    /// This thread's memoised answer for `asked` (the name as a caller spelled it), if still valid.
    func memoAnswer(_ asked: String, family: HTTPDNSAddressFamily) -> HTTPDNSAnswer? {
        HTTPDNSHitMemo.answer(
            HTTPDNSHitMemo.Key(engine: serial, host: asked, family: family), now: clock.now(), generation: generation.load(ordering: .acquiring))
    }

    /// - Parameter asked: the name as the caller spelled it, when the memo was already asked for it
    ///   (``lookupCache(_:family:)``): a fresh answer is memoised under that spelling.
    func lookupCache(_ key: HTTPDNSCacheKey, asked: String? = nil) -> CacheOutcome {
        let family = key.family
        // IP literals and invalid names are never cached, so a hit needs no checks.
        switch cacheStep(key, asked: asked) {
        case .hit(let answer, let refresh):
            if answer.isStale {
                monitor.cacheServedStale(host: key.host, family: family)
            } else {
                monitor.cacheHit(host: key.host, family: family)
            }
            if refresh { startBackgroundRefresh(key) }
            return .hit(answer)
        case .upstream(let staleFallback):
            return .miss(key, staleFallback: staleFallback)
        }
    }

    /// What ``resolve(_:family:)`` would return at once from the cache (a stale answer included when
    /// the policy serves it, its refresh started, the hit reported), or nil when it would have to ask
    /// a provider. Never waits: for a caller on a thread of its own that answers many clients (the
    /// stub's UDP thread) and sends only the misses to a task.
    package func resolveFromCache(_ host: String, family: HTTPDNSAddressFamily? = nil) -> HTTPDNSAnswer? {
        guard case .hit(let answer) = lookupCache(host, family: family) else { return nil }
        return answer
    }

    /// The cached answer for `host`, if a fresh one exists; never goes upstream and never waits.
    public func cachedAnswer(_ host: String, family: HTTPDNSAddressFamily? = nil) -> HTTPDNSAnswer? {
        let family = concreteFamily(family)
        // A memoised answer is fresh: it is used only before its entry's refresh point.
        if let answer = memoAnswer(host, family: family) { return answer }
        let key = HTTPDNSCacheKey(host: HTTPDNSHostPolicy.normalize(host), family: family)
        guard case .hit(let answer, _) = cacheStep(key, asked: host, freshOnly: true) else { return nil }
        return answer
    }

    /// What a miss found under the lock: the answer after all, or the flight to wait for.
    enum MissStep {
        case answered(HTTPDNSAnswer)
        case flight(HTTPDNSFlight, isNew: Bool)
    }

    enum CacheStep {
        case hit(HTTPDNSAnswer, refresh: Bool)
        case upstream(staleFallback: Bool)
    }

    /// What the cache says about `key` now: from this thread's memo when it holds a valid copy,
    /// otherwise from the shared cache, the lock held only for the lookup itself.
    ///
    /// - Parameter asked: the name as the caller spelled it, when the caller has already asked the
    ///   memo for it (the memo is then not asked again, and a fresh answer is memoised under it).
    func cacheStep(_ key: HTTPDNSCacheKey, asked: String? = nil, freshOnly: Bool = false) -> CacheStep {
        let now = clock.now()
        let memoKey = HTTPDNSHitMemo.Key(engine: serial, host: asked ?? key.host, family: key.family)
        // The memo is keyed by host and family: an answer scoped to a client subnet (the server's
        // lookups for its clients) never enters it, or it would reach every other subnet.
        let memoised = key.clientSubnet == nil
        if memoised, asked == nil,
            let answer = HTTPDNSHitMemo.answer(memoKey, now: now, generation: generation.load(ordering: .acquiring)) {
            return .hit(answer, refresh: false)
        }
        let optimistic = freshOnly ? nil : optimisticStaleness
        let (lookup, refresh, cooling, memoGeneration, servesExpired) = state.withLock {
            state -> (HTTPDNSCachePolicy.Lookup, Bool, Bool, UInt64?, Bool) in
            let lookup = state.cache.lookup(key, now: now)
            var refresh = false
            var memoGeneration: UInt64?
            var servesExpired = false
            switch lookup {
            case .fresh(let entry, _, let due):
                refresh = due && state.inFlight[key] == nil && !state.diskRefreshing.contains(key)
                // Memoised only while no address of it cools down: the order is then the cache's.
                if !due, state.addressCooldown.isEmpty
                    || entry.addresses.allSatisfy({ (state.addressCooldown[$0] ?? 0) <= now }) {
                    memoGeneration = generation.load(ordering: .relaxed)
                }
            case .expired(let entry):
                // Optimistic mode: young enough, and learnt on the current network.
                if let optimistic, now - entry.expiresAt <= optimistic,
                   state.previousNetwork.isEmpty || !state.previousNetwork.contains(key) {
                    servesExpired = true
                    refresh = state.inFlight[key] == nil
                }
            default:
                break
            }
            return (lookup, refresh, !state.addressCooldown.isEmpty, memoGeneration, servesExpired)
        }
        var answer: HTTPDNSAnswer
        switch lookup {
        case .fresh(let entry, let remaining, _):
            if memoised, let memoGeneration {
                let refreshAt = entry.storedAt + Double(entry.ttl) * configuration.cache.policy.refreshFraction
                HTTPDNSHitMemo.remember(memoKey, answering: key.host, entry, refreshAt: refreshAt, generation: memoGeneration)
            }
            answer = cachedAnswer(key, entry, ttl: remaining, stale: false)
        case .stale(let entry) where !freshOnly:
            answer = cachedAnswer(key, entry, ttl: configuration.cache.policy.staleTTL, stale: true)
        case .expired(let entry) where servesExpired:
            answer = cachedAnswer(key, entry, ttl: configuration.cache.policy.staleTTL, stale: true)
        case .expired, .stale:
            return .upstream(staleFallback: true)
        case .miss:
            return .upstream(staleFallback: false)
        }
        if cooling { answer = reordered(answer) }
        return .hit(answer, refresh: refresh)
    }

    /// A cache miss (or expired entry): one shared upstream lookup, stale answer if it fails.
    @usableFromInline
    func resolveMiss(
        _ key: HTTPDNSCacheKey, original host: String, family: HTTPDNSAddressFamily?, staleFallback: Bool,
        bypassingCache: Bool = false
    ) async throws -> HTTPDNSAnswer {
        if let literal = HTTPDNSIPAddress(key.host) {
            return HTTPDNSAnswer(host: host, addresses: [literal], ttl: 0, source: "literal", origin: .static)
        }
        guard HTTPDNSHostPolicy.isValidHostName(key.host) else {
            throw HTTPDNSError(.invalidHost, "not a valid host name", host: host)
        }
        // Static entries and unprotected names are never cached, so they always arrive here and the
        // cache-hit path pays nothing for them.
        if let pinned = staticAnswer(key) { return pinned }
        if !protects(key.host) { return try await resolveUnprotected(key) }
        if key.family == .both, let discovery = state.withLock({ $0.nat64Discovery }) {
            await discovery.value
            // Without a NAT64 prefix `.auto` now means IPv6 only.
            let decided = concreteFamily(family)
            if decided != key.family {
                return bypassingCache
                    ? try await resolveBypassingCache(host, family: decided) : try await resolve(host, family: decided)
            }
        }
        // The cache is asked again under the same lock that registers the flight: a flight that
        // finished since the first look (it stores its answer and leaves in one locked step) must not
        // be followed by a second upstream request for the same name. A lookup that bypasses the
        // cache skips that look, but still joins a flight already under way: it asks upstream too.
        let now = clock.now()
        let step = state.withLock { state -> MissStep in
            if !bypassingCache, state.inFlight[key] == nil, case .fresh(let entry, let remaining, _) = state.cache.lookup(key, now: now) {
                return .answered(cachedAnswer(key, entry, ttl: remaining, stale: false))
            }
            let (flight, isNew) = upstreamFlight(key, state: &state)
            return .flight(flight, isNew: isNew)
        }
        let flight: HTTPDNSFlight
        let isNew: Bool
        switch step {
        case .answered(let answer): return reordered(answer)
        case .flight(let found, let new): (flight, isNew) = (found, new)
        }
        // A new flight asking an HTTP service first starts once this caller is parked: the
        // transport's thread it wakes then finds this one about to sleep rather than still running
        // beside it. Any other starts here, its task on this thread up to its first suspension.
        let startParked = isNew && leadingProvider != nil
        if isNew, !startParked { launch(key, flight) }
        do {
            // The shared lookup is not cancelled with one waiter (others may wait on it), but a
            // cancelled waiter leaves at once.
            let answer = try await flight.wait(then: startParked ? { self.launch(key, flight, suspending: true) } : nil)
            return reordered(answer)
        } catch let error as HTTPDNSError {
            if staleFallback, error.code != .cancelled, let stale = serveStale(key) {
                return stale
            }
            throw error
        }
    }

    /// Resolves `hosts` in the background of start-up; failures are reported to the monitor only.
    ///
    /// Names are asked in batches where a provider has a batch form (one request for many names);
    /// what the batches do not answer is resolved one by one, with the usual failover.
    public func preResolve(_ hosts: [String], family: HTTPDNSAddressFamily? = nil) async {
        let family = concreteFamily(family)
        var remaining: [String] = []
        for host in hosts {
            let name = HTTPDNSHostPolicy.normalize(host)
            guard HTTPDNSHostPolicy.isValidHostName(name), !HTTPDNSIPAddress.isLiteral(name), !remaining.contains(name),
                  cachedAnswer(name, family: family) == nil
            else { continue }
            remaining.append(name)
        }
        if remaining.count > 1 {
            let epoch = state.withLock { $0.networkEpoch }
            for provider in orderedProviders() where !remaining.isEmpty {
                let batch = remaining
                state.withLock { $0.upstreamLookups += 1 }
                let sets = (try? await withDeadline(seconds: configuration.timeouts.httpdnsBudget.inSeconds, context: provider.name) {
                    try await provider.resolve(batch: batch, family: family)
                }) ?? []
                for set in sets where remaining.contains(set.host) {
                    let kept = configuration.hygiene.filter(set, family: family).kept
                    guard !kept.isEmpty else { continue }
                    var answer = HTTPDNSAnswer(
                        host: set.host, addresses: kept, ttl: set.ttl ?? configuration.cache.policy.defaultTTL,
                        source: provider.name, origin: .httpdns)
                    let ttl = cacheTTL(host: set.host, proposed: answer.ttl)
                    let now = clock.now()
                    let stored = change { state -> Bool in
                        // A batch that was asked on the previous network is not stored.
                        guard state.networkEpoch == epoch else { return false }
                        answer.addresses = usableAddresses(answer.addresses, family: family, prefix: state.nat64Prefix)
                        store(HTTPDNSCacheKey(host: set.host, family: family), answer, ttl: ttl, now: now, in: &state)
                        return true
                    }
                    guard stored else { continue }
                    answer.ttl = ttl
                    monitor.lookupAnswered(answer)
                    remaining.removeAll { $0 == set.host }
                }
            }
            persistence?.scheduleSave(self)
        }
        await withTaskGroup(of: Void.self) { group in
            for host in remaining {
                group.addTask { _ = try? await self.resolve(host, family: family) }
            }
        }
    }

    /// Forgets the cached answer for `host` (every family), for example after the provider said 401 or a
    /// certificate did not verify at a cached address.
    public func invalidate(_ host: String) {
        let name = HTTPDNSHostPolicy.normalize(host)
        change { state in
            for family in HTTPDNSAddressFamily.allCases {
                state.cache.remove(HTTPDNSCacheKey(host: name, family: family))
            }
        }
        persistence?.scheduleSave(self)
    }

    /// Tells the engine that connecting to `address` failed: for ``HTTPDNSConfiguration/Failover/addressCooldown``
    /// seconds it is moved behind the other addresses of every answer.
    public func reportUnreachable(_ address: HTTPDNSIPAddress) {
        let until = configuration.clock.now() + configuration.failover.addressCooldown.inSeconds
        change { state in
            state.addressCooldown[address] = until
            addressesCooling.store(true, ordering: .releasing)
        }
    }

    /// Whether `address` is cooling down after a failed connection.
    package func isCoolingDown(_ address: HTTPDNSIPAddress) -> Bool {
        let now = configuration.clock.now()
        return state.withLock { ($0.addressCooldown[address] ?? 0) > now }
    }

    /// Writes the cache to the persistence file now (changes are also saved on their own, at most once
    /// per ``HTTPDNSConfiguration/Cache/persistenceInterval``): call it at orderly shutdown. It blocks
    /// the calling thread until the file is written (after a load still under way), so call it from
    /// a thread of your own, not from an async context.
    public func saveCache() throws {
        guard let persistence else { return }
        try persistence.save { [state] in state.withLock { $0.cache.entries } }
    }

    /// Waits until the persisted cache is loaded and queued saves are written (for tests).
    package func waitForCacheFile() {
        persistence?.waitForPendingWork()
    }

    // MARK: - Helpers

    /// Runs `body` under the lock as a change that can alter answers (a store, a removal, a failed
    /// refresh, a cool-down): the per-thread hit memos stop using what they copied before it.
    func change<Result>(_ body: (inout State) -> Result) -> Result {
        state.withLock { state in
            defer { generation.add(1, ordering: .releasing) }
            return body(&state)
        }
    }

    /// The answer a cache entry gives for `key`.
    func cachedAnswer(_ key: HTTPDNSCacheKey, _ entry: HTTPDNSCacheEntry, ttl: Int, stale: Bool) -> HTTPDNSAnswer {
        var answer = HTTPDNSAnswer(
            host: key.host, addresses: entry.addresses, ttl: ttl, source: entry.source, origin: entry.origin,
            fromCache: true, isStale: stale)
        answer.fromDisk = entry.fromDisk
        return answer
    }

    static func coolingLast(_ addresses: [HTTPDNSIPAddress], cooldown: [HTTPDNSIPAddress: Double], now: Double) -> [HTTPDNSIPAddress] {
        let cooling = addresses.filter { (cooldown[$0] ?? 0) > now }
        guard !cooling.isEmpty else { return addresses }
        return addresses.filter { (cooldown[$0] ?? 0) <= now } + cooling
    }

    func reordered(_ answer: HTTPDNSAnswer) -> HTTPDNSAnswer {
        guard addressesCooling.load(ordering: .acquiring) else { return answer }
        let now = configuration.clock.now()
        var answer = answer
        state.withLock { state in
            guard !state.addressCooldown.isEmpty else { return }
            answer.addresses = HTTPDNSEngine.coolingLast(answer.addresses, cooldown: state.addressCooldown, now: now)
        }
        return answer
    }
}

/// Serial numbers for engines (``HTTPDNSEngine/serial``).
private let engineSerials = HTTPDNSLock<UInt64>(0)
