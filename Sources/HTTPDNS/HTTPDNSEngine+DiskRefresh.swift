import HTTPDNSCore

/// Entries loaded from the cache file are only as good as the file: each is served at once (an
/// answer from disk beats a cold lookup) but asked upstream again right after the load, so that the
/// file's answers live for seconds, not for their saved TTLs.
extension HTTPDNSEngine {
    /// How many requests a refresh of loaded entries keeps in flight at once (batch requests and
    /// single-name lookups alike): a file of thousands of names must not become thousands of
    /// simultaneous requests.
    static let diskRefreshConcurrency = 4

    /// Starts refreshing `keys`, the entries just loaded from the cache file, in a task of its own.
    func refreshLoadedInBackground(_ keys: [HTTPDNSCacheKey]) {
        guard !keys.isEmpty else { return }
        Task { await self.refreshLoaded(keys) }
    }

    /// Asks upstream for every entry in `keys` that is still the file's, and replaces it with the
    /// fresh answer; an entry whose refresh fails stays as loaded (usable, still marked
    /// ``HTTPDNSAnswer/fromDisk``, refreshed again at a use after the retry interval).
    ///
    /// Names without a client subnet are first asked in batches from the leading providers that have
    /// a batch form (DNSPod, Alibaba), ``HTTPDNSProviderFormat/maxHostsPerRequest`` names a request;
    /// whatever is left is looked up one name at a time with the usual failover. Either way at most
    /// ``diskRefreshConcurrency`` requests run at once.
    func refreshLoaded(_ keys: [HTTPDNSCacheKey]) async {
        let batchable = keys.filter { $0.clientSubnet == nil }
        // While a batch may answer them, a use of these entries starts no refresh of its own.
        state.withLock { $0.diskRefreshing.formUnion(batchable) }
        var answered: Set<HTTPDNSCacheKey> = []
        for family in HTTPDNSAddressFamily.allCases {
            var names = batchable.filter { $0.family == family }.map(\.host)
            guard names.count > 1 else { continue }
            // Batch providers in the configured order, up to the first without a batch form: a single
            // lookup starts at the first provider anyway.
            for provider in orderedProviders() where !names.isEmpty {
                guard let batching = provider as? HTTPDNSProvider, batching.format.maxHostsPerRequest > 1 else { break }
                let done = await refreshInBatches(names, family: family, provider: batching)
                names.removeAll { done.contains($0) }
                answered.formUnion(done.map { HTTPDNSCacheKey(host: $0, family: family) })
            }
        }
        state.withLock { $0.diskRefreshing.subtract(batchable) }
        if !answered.isEmpty { persistence?.scheduleSave(self) }
        let single = keys.filter { !answered.contains($0) }
        await Self.forEach(single, concurrency: Self.diskRefreshConcurrency) { key in
            await self.refreshSingle(key)
        }
    }

    /// Asks `provider` for `names` in batch requests; stores each answer over an entry still from
    /// disk (after the hygiene rules, as any answer). Returns the names answered.
    private func refreshInBatches(_ names: [String], family: HTTPDNSAddressFamily, provider: HTTPDNSProvider) async -> Set<String> {
        let size = provider.format.maxHostsPerRequest
        let chunks = stride(from: 0, to: names.count, by: size).map { Array(names[$0..<min($0 + size, names.count)]) }
        let answered = HTTPDNSLock<Set<String>>([])
        await Self.forEach(chunks, concurrency: Self.diskRefreshConcurrency) { chunk in
            self.state.withLock { $0.upstreamLookups += 1 }
            let sets = (try? await withDeadline(seconds: self.configuration.timeouts.httpdnsBudget.inSeconds, context: provider.name) {
                try await provider.resolve(batch: chunk, family: family)
            }) ?? []
            for set in sets where chunk.contains(set.host) {
                let kept = self.configuration.hygiene.filter(set, family: family).kept
                guard !kept.isEmpty else { continue }
                let key = HTTPDNSCacheKey(host: set.host, family: family)
                let now = self.clock.now()
                let stored = self.change { state -> HTTPDNSCacheEntry? in
                    // Replaced only while it is the file's entry: a lookup may have answered it meanwhile,
                    // or dropped it (a 401, a failed certificate).
                    guard state.cache.peek(key)?.fromDisk == true else { return nil }
                    return state.cache.store(key, addresses: kept, ttl: set.ttl, source: provider.name, origin: provider.origin, now: now)
                }
                answered.withLock { _ = $0.insert(set.host) }
                guard let stored else { continue }
                self.monitor.lookupAnswered(HTTPDNSAnswer(
                    host: set.host, addresses: kept, ttl: stored.ttl, source: provider.name, origin: provider.origin))
                self.monitor.cacheRefreshed(host: set.host, family: family)
            }
        }
        return answered.withLock { $0 }
    }

    /// Refreshes one loaded entry through the usual upstream lookup (joining one in flight) and waits
    /// for it; a failure keeps the entry and defers its next refresh by the retry interval.
    private func refreshSingle(_ key: HTTPDNSCacheKey) async {
        let registered = state.withLock { state -> (flight: HTTPDNSFlight, isNew: Bool)? in
            guard state.cache.peek(key)?.fromDisk == true else { return nil }
            return upstreamFlight(key, state: &state)
        }
        guard let (flight, isNew) = registered else { return }
        if isNew { launch(key, flight) }
        do {
            _ = try await flight.wait()
            if isNew { monitor.cacheRefreshed(host: key.host, family: key.family) }
        } catch {
            if isNew { change { _ = $0.cache.refreshFailed(key, now: clock.now()) } }
        }
    }

    /// Runs `body` over `items`, at most `concurrency` at once.
    static func forEach<Item: Sendable>(
        _ items: [Item], concurrency: Int, _ body: @escaping @Sendable (Item) async -> Void
    ) async {
        await withTaskGroup(of: Void.self) { group in
            for (index, item) in items.enumerated() {
                if index >= max(concurrency, 1) { await group.next() }
                group.addTask { await body(item) }
            }
        }
    }
}
