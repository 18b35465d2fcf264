import HTTPDNSCore

extension HTTPDNSEngine {
    /// The one upstream lookup for `key`: joins the one in flight or registers a new one (RFC 5452:
    /// one outstanding query per name and type). Called under the lock; a new flight (`isNew`) must be
    /// started with ``launch(_:_:)`` once the lock is released.
    func upstreamFlight(_ key: HTTPDNSCacheKey, state: inout State) -> (flight: HTTPDNSFlight, isNew: Bool) {
        if let running = state.inFlight[key] { return (running, false) }
        state.upstreamLookups += 1
        let flight = HTTPDNSFlight(host: key.host)
        state.inFlight[key] = flight
        return (flight, true)
    }

    /// Starts the upstream lookup of a new flight; its outcome goes to the flight's waiters.
    ///
    /// The lookup never runs in a caller's task: a cancelled caller leaves while the lookup goes on
    /// for the others and for the cache. When the first provider is an HTTP service asked with one
    /// request (the usual case), that request is sent from here and its answer handled where it
    /// arrives, on the transport's loop thread, so the waiting caller is resumed straight from there;
    /// only a failure moves the rest of the failover into a task. Otherwise the whole lookup is a
    /// task, started on this thread up to its first suspension, or, from a waiter about to suspend
    /// (`suspending`: ``HTTPDNSFlight/wait(then:)``, where no task may run on this thread), a task
    /// of the pool.
    func launch(_ key: HTTPDNSCacheKey, _ flight: HTTPDNSFlight, suspending: Bool = false) {
        // The key's client subnet reaches the resolvers that speak DNS as a task-local, for the
        // request built here and for the tasks started here (they inherit it).
        guard HTTPDNSClientSubnet.current == key.clientSubnet else {
            return HTTPDNSClientSubnet.$current.withValue(key.clientSubnet) { launch(key, flight, suspending: suspending) }
        }
        let host = key.host, family = key.family
        monitor.lookupStarted(host: host, family: family)
        let budget = configuration.timeouts.httpdnsBudget.inSeconds
        let deadline = ContinuousClock.now.advanced(by: .seconds(budget))
        // While nothing cools down the order is the configured one, whose first HTTP service is known.
        let cooling = providersCooling.load(ordering: .acquiring)
        let providers = cooling ? orderedProviders() : configuration.resolvers
        let leading = cooling ? providers.first as? HTTPDNSProvider : leadingProvider
        if let first = leading {
            // The completion keeps what it needs of the provider, not a copy of the whole value.
            let source = first.name, origin = first.origin
            let started = first.start(host, family: family, within: min(configuration.timeouts.perAttempt.inSeconds, budget)) {
                [self] result in
                do {
                    let answer = try accept(result.get(), source: source, origin: origin, isStatic: false, host: host, family: family)
                    land(key, flight, .success(answer))
                } catch {
                    let failure = providerFailed(error, source: source, host: host)
                    let earlier = [HTTPDNSError.Attempt(source: source, error: failure)]
                    // Started from the transport's thread, outside any task: the client subnet is
                    // set again for the rest of the failover.
                    Task {
                        let outcome = await HTTPDNSClientSubnet.$current.withValue(key.clientSubnet) {
                            await Self.outcome(host: host) {
                                try await self.resolveUpstream(
                                    host, family: family, providers: Array(providers.dropFirst()), earlier: earlier,
                                    deadline: deadline)
                            }
                        }
                        self.land(key, flight, outcome)
                    }
                }
            }
            if started { return }
        }
        let lookup: @Sendable () async -> Void = {
            let outcome = await Self.outcome(host: host) {
                try await self.resolveUpstream(host, family: family, providers: providers, earlier: [], deadline: deadline)
            }
            self.land(key, flight, outcome)
        }
        if suspending {
            Task(operation: lookup)
        } else {
            Task.immediate(operation: lookup)
        }
    }

    /// An upstream lookup's result as a flight outcome.
    static func outcome(host: String, _ lookup: () async throws -> HTTPDNSAnswer) async -> Result<HTTPDNSAnswer, HTTPDNSError> {
        do {
            return .success(try await lookup())
        } catch {
            return .failure(httpdnsError(error, host: host))
        }
    }

    /// Stores a lookup's answer (or drops the entry after a 401), reports it, and hands it to the
    /// flight's waiters.
    func land(_ key: HTTPDNSCacheKey, _ flight: HTTPDNSFlight, _ result: Result<HTTPDNSAnswer, HTTPDNSError>) {
        let outcome: HTTPDNSFlight.Outcome
        switch result {
        case .success(let answer):
            let now = clock.now()
            let ttl = cacheTTL(host: key.host, proposed: answer.ttl)
            var answer = answer
            answer.ttl = ttl
            change { state in
                answer.addresses = usableAddresses(answer.addresses, family: key.family, prefix: state.nat64Prefix)
                // A flight that networkDidChange() left behind answers its callers but stores nothing.
                guard leave(key, flight, in: &state) else { return }
                store(key, answer, ttl: ttl, now: now, in: &state)
            }
            persistence?.scheduleSave(self)
            monitor.lookupAnswered(answer)
            outcome = .success(answer)
        case .failure(let failure):
            change { state in
                guard leave(key, flight, in: &state) else { return }
                if failure.code == .unauthorized { state.cache.remove(key) }
            }
            monitor.lookupFailed(host: key.host, family: key.family, error: failure)
            outcome = .failure(failure)
        }
        flight.finish(outcome)
    }

    /// Takes `flight` out of the lookups in flight; false when it was no longer there for `key`
    /// (``networkDidChange()`` left it behind, and a newer one may stand there now).
    func leave(_ key: HTTPDNSCacheKey, _ flight: HTTPDNSFlight, in state: inout State) -> Bool {
        guard let found = state.inFlight.removeValue(forKey: key) else { return false }
        guard found === flight else {
            state.inFlight[key] = found
            return false
        }
        return true
    }

    /// The TTL an answer for `host` is cached for: the provider's `proposed` TTL within the floor and
    /// ceiling, then ``HTTPDNSConfiguration/Cache/ttlPolicy`` (kept within 1 s and the ceiling).
    func cacheTTL(host: String, proposed: Int) -> Int {
        let settings = configuration.cache.policy
        let ceiling = max(settings.maximumTTL, settings.minimumTTL, 1)
        let clamped = min(max(proposed, settings.minimumTTL), ceiling)
        guard let hook = configuration.cache.ttlPolicy else { return clamped }
        let chosen = hook(host, .seconds(clamped)).inSeconds.rounded(.up)
        guard chosen.isFinite else { return clamped }
        return Int(min(max(chosen, 1), Double(ceiling)))
    }

    /// Stores `answer` for `ttl` seconds (already final: no floor or ceiling is applied again).
    func store(_ key: HTTPDNSCacheKey, _ answer: HTTPDNSAnswer, ttl: Int, now: Double, in state: inout State) {
        state.cache.insert(key, HTTPDNSCacheEntry(
            addresses: answer.addresses, source: answer.source, origin: answer.origin, storedAt: now, ttl: ttl))
        if !state.previousNetwork.isEmpty { state.previousNetwork.remove(key) }
    }

    /// Refreshes `key` without anyone waiting; the answer lands in the cache.
    func startBackgroundRefresh(_ key: HTTPDNSCacheKey) {
        let (flight, isNew) = state.withLock { upstreamFlight(key, state: &$0) }
        // Launched from a task of its own: the caller (a cache hit) does not wait for the refresh, not
        // even for its request to be built.
        if isNew { Task { self.launch(key, flight) } }
        let monitor = self.monitor
        let clock = self.clock
        flight.observe { [weak self] outcome in
            switch outcome {
            case .success:
                monitor.cacheRefreshed(host: key.host, family: key.family)
            case .failure:
                // Keep the entry; wait the retry interval before trying again.
                _ = self?.change { $0.cache.refreshFailed(key, now: clock.now()) }
            }
        }
    }

    /// After a failed refresh of an expired entry: the stale answer, if the entry is young enough.
    func serveStale(_ key: HTTPDNSCacheKey) -> HTTPDNSAnswer? {
        let now = clock.now()
        guard let entry = change({ $0.cache.refreshFailed(key, now: now) }) else { return nil }
        monitor.cacheServedStale(host: key.host, family: key.family)
        return reordered(cachedAnswer(key, entry, ttl: configuration.cache.policy.staleTTL, stale: true))
    }

    /// Asks `providers` in order until `deadline` (the HTTPDNS budget), then LocalDNS; `earlier`
    /// holds the failures of providers already asked for this lookup.
    func resolveUpstream(
        _ host: String, family: HTTPDNSAddressFamily, providers: [any HTTPDNSResolver],
        earlier: [HTTPDNSError.Attempt], deadline: ContinuousClock.Instant
    ) async throws -> HTTPDNSAnswer {
        let timeouts = configuration.timeouts
        var attempts = earlier
        for provider in providers {
            try checkCancelled(host)
            let remaining = ContinuousClock.now.duration(to: deadline)
            guard remaining > .zero else {
                attempts.append(.init(
                    source: provider.name,
                    error: HTTPDNSError(.timedOut, "HTTPDNS budget of \(timeouts.httpdnsBudget) s used up", host: host)))
                break
            }
            let seconds = min(timeouts.perAttempt.inSeconds, Double(remaining.components.seconds) + Double(remaining.components.attoseconds) / 1e18)
            do {
                let records = try await resolveWithin(provider, host, family: family, within: seconds)
                return try accept(
                    records, source: provider.name, origin: provider.origin, isStatic: provider is HTTPDNSStaticResolver,
                    host: host, family: family)
            } catch {
                let failure = providerFailed(error, source: provider.name, host: host)
                if failure.code == .cancelled, Task.isCancelled { throw failure }
                attempts.append(.init(source: provider.name, error: failure))
            }
        }

        guard !configuration.failover.httpdnsOnly, let local = localResolver else {
            throw HTTPDNSError(.allAttemptsFailed, "every HTTPDNS provider failed", host: host, attempts: attempts)
        }
        monitor.fellBackToLocalDNS(host: host)
        do {
            try checkCancelled(host)
            return try await askLocal(local, host, family: family)
        } catch {
            let failure = HTTPDNSEngine.httpdnsError(error, host: host, source: local.name)
            if failure.code == .cancelled, Task.isCancelled { throw failure }
            attempts.append(.init(source: local.name, error: failure))
            monitor.resolverFailed(resolver: local.name, host: host, error: failure)
            throw HTTPDNSError(.allAttemptsFailed, "every HTTPDNS provider and LocalDNS failed", host: host, attempts: attempts)
        }
    }

    /// The answer the resolver named `source` gave, once the hygiene rules keep an address of it;
    /// marks that resolver healthy.
    ///
    /// - Parameter isStatic: whether the resolver is an ``HTTPDNSStaticResolver``: static entries
    ///   are the user's own pins (curl's --resolve), trusted as given, loopback and private space
    ///   included; everything from a service goes through the hygiene rules.
    func accept(
        _ records: HTTPDNSRecordSet, source: String, origin: HTTPDNSAnswer.Origin, isStatic: Bool, host: String,
        family: HTTPDNSAddressFamily
    ) throws(HTTPDNSError) -> HTTPDNSAnswer {
        let hygiene = isStatic ? HTTPDNSAnswerHygiene(allowPrivate: true) : configuration.hygiene
        let outcome = hygiene.filter(records, family: family)
        guard !outcome.kept.isEmpty else {
            if outcome.rejected.isEmpty {
                throw HTTPDNSError(.noAddress, "answer holds no \(family) address", host: host, source: source)
            }
            let list = outcome.rejected.map(\.description).joined(separator: ", ")
            throw HTTPDNSError(.bogonAnswer, "only bogon addresses (\(list))", host: host, source: source)
        }
        markProvider(source, failed: false)
        return HTTPDNSAnswer(
            host: host, addresses: outcome.kept, ttl: records.ttl ?? configuration.cache.policy.defaultTTL,
            source: source, origin: origin)
    }

    /// Reports the failure of the resolver named `source` (and cools it down when the fault is its own).
    func providerFailed(_ error: any Error, source: String, host: String) -> HTTPDNSError {
        let failure = HTTPDNSEngine.httpdnsError(error, host: host, source: source)
        // A cancelled caller is not the provider's failure.
        if failure.code == .cancelled, Task.isCancelled { return failure }
        monitor.resolverFailed(resolver: source, host: host, error: failure)
        if HTTPDNSEngine.isProviderFault(failure) { markProvider(source, failed: true) }
        return failure
    }

    /// Providers in configured order, those cooling down after failures moved to the back.
    func orderedProviders() -> [any HTTPDNSResolver] {
        guard providersCooling.load(ordering: .acquiring) else { return configuration.resolvers }
        let now = configuration.clock.now()
        let cooling = state.withLock { $0.providerCooldown }
        guard !cooling.isEmpty else { return configuration.resolvers }
        let healthy = configuration.resolvers.filter { (cooling[$0.name] ?? 0) <= now }
        let resting = configuration.resolvers.filter { (cooling[$0.name] ?? 0) > now }
        return healthy + resting
    }

    func markProvider(_ name: String, failed: Bool) {
        // A success while nothing cools has nothing to clear.
        guard failed || providersCooling.load(ordering: .acquiring) else { return }
        let until = configuration.clock.now() + configuration.failover.providerCooldown.inSeconds
        state.withLock { state in
            if failed {
                state.providerCooldown[name] = until
            } else {
                state.providerCooldown.removeValue(forKey: name)
            }
            providersCooling.store(!state.providerCooldown.isEmpty, ordering: .releasing)
        }
    }

    /// Failures that say the provider is unwell, as opposed to answers about the name.
    static func isProviderFault(_ error: HTTPDNSError) -> Bool {
        switch error.code {
        case .nameNotFound, .noAddress, .bogonAnswer, .cancelled, .invalidHost: false
        default: true
        }
    }

    static func httpdnsError(_ error: any Error, host: String, source: String? = nil) -> HTTPDNSError {
        if var known = error as? HTTPDNSError {
            if known.host == nil { known.host = host }
            if known.source == nil { known.source = source }
            return known
        }
        if error is CancellationError {
            return HTTPDNSError(.cancelled, "lookup cancelled", host: host, source: source)
        }
        return HTTPDNSError(.transport, String(describing: error), host: host, source: source)
    }

    func checkCancelled(_ host: String) throws {
        if Task.isCancelled { throw HTTPDNSError(.cancelled, "lookup cancelled", host: host) }
    }
}
