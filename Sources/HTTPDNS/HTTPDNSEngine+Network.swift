import HTTPDNSCore

extension HTTPDNSEngine {
    /// Starts over after the device moved to another network (Wi-Fi, cellular, a VPN coming up).
    ///
    /// Answers and cool-downs learnt on the old network say nothing about the new one: a CDN
    /// answers by the resolver's location, an address that timed out behind one gateway may work
    /// behind the next. So this drops every address and provider cool-down, every remembered connect
    /// time, and every cached answer —
    /// or, with ``HTTPDNSConfiguration/Network/keepsStaleAnswersOnChange`` (the default), keeps the
    /// answers as expired entries that are served only if HTTPDNS and LocalDNS both fail. Lookups in
    /// flight finish for their callers but store nothing. The address families for
    /// ``HTTPDNSAddressFamily/auto`` are detected again (and the NAT64 prefix on an IPv6-only network),
    /// then ``HTTPDNSConfiguration/Cache/preResolve`` is resolved again unless
    /// ``HTTPDNSConfiguration/Network/preResolvesOnChange`` is off.
    ///
    /// Safe to call from any thread, often (the rtnetlink watcher calls it once per debounced burst).
    /// - Returns: the background work (detection and pre-resolution), for callers that want to wait.
    @discardableResult
    public func networkDidChange() -> Task<Void, Never> {
        let now = clock.now()
        let keeps = configuration.network.keepsStaleAnswersOnChange
        change { state in
            state.networkEpoch &+= 1
            state.inFlight.removeAll()
            state.addressCooldown.removeAll()
            addressesCooling.store(false, ordering: .releasing)
            state.providerCooldown.removeAll()
            providersCooling.store(false, ordering: .releasing)
            state.ranking.removeAll()
            state.nat64Prefix = nil
            state.previousNetwork.removeAll()
            guard keeps else {
                state.cache.removeAll()
                return
            }
            // Least recently used first, so that re-inserting keeps the LRU order.
            for (key, entry) in state.cache.entries.reversed() {
                var expired = entry
                if entry.expiresAt > now {
                    // Expired now, whatever the stored time says (a clock set back included).
                    expired.storedAt = min(entry.storedAt, now)
                    expired.ttl = max(0, Int((now - expired.storedAt).rounded(.down)))
                }
                expired.staleUntil = nil
                expired.nextRefreshAt = nil
                state.cache.insert(key, expired)
                state.previousNetwork.insert(key)
            }
        }
        persistence?.scheduleSave(self)
        let discovery = detectNetwork()
        let names = configuration.network.preResolvesOnChange ? configuration.cache.preResolve : []
        return Task {
            await discovery?.value
            if !names.isEmpty { await self.preResolve(names) }
        }
    }

    /// The NAT64 prefix the engine synthesizes IPv6 addresses with, if it found one (only on an
    /// IPv6-only network, with ``HTTPDNSConfiguration/family`` `.auto`).
    package var nat64Prefix: HTTPDNSNAT64Prefix? {
        state.withLock { $0.nat64Prefix }
    }

    /// What ``HTTPDNSAddressFamily/auto`` stands for on the current network.
    public var autoFamilyInUse: HTTPDNSAddressFamily {
        FamilyCode.family(autoFamily.load(ordering: .relaxed))
    }

    /// `family` (or the configured one) with `.auto` replaced by what the network can use.
    @usableFromInline
    func concreteFamily(_ family: HTTPDNSAddressFamily?) -> HTTPDNSAddressFamily {
        let family = family ?? defaultFamily
        guard family == .auto else { return family }
        return FamilyCode.family(autoFamily.load(ordering: .relaxed))
    }

    /// Detects the routed families (synchronously: a few non-blocking system calls) and, on an
    /// IPv6-only network with `.auto` configured, starts discovering the NAT64 prefix.
    /// - Returns: the discovery, when one started.
    @discardableResult
    func detectNetwork() -> Task<Void, Never>? {
        let families = configuration.familyProbe.map { probe in
            let found = probe()
            return HTTPDNSRouteProbe.Families(ipv4: found.ipv4, ipv6: found.ipv6)
        } ?? HTTPDNSRouteProbe.families()
        let discovers = configuration.family == .auto && families.ipv6 && !families.ipv4
        let family: HTTPDNSAddressFamily
        switch (families.ipv4, families.ipv6) {
        case (true, false): family = .ipv4
        // IPv6 only: `.both` while a NAT64 prefix may turn IPv4 answers into usable addresses.
        case (false, true): family = discovers ? .both : .ipv6
        // Dual stack, or no route at all (nothing to choose from: ask for everything).
        default: family = .both
        }
        autoFamily.store(FamilyCode.code(family), ordering: .relaxed)
        guard discovers else {
            state.withLock { $0.nat64Discovery = nil }
            return nil
        }
        let discovery = Task { await self.discoverNAT64() }
        state.withLock { $0.nat64Discovery = discovery }
        return discovery
    }

    /// RFC 7050: asks LocalDNS for the AAAA records of `ipv4only.arpa` and keeps the first prefix
    /// that embeds a well-known address; without one `.auto` means IPv6 only.
    ///
    /// Not DNSSEC-validated (RFC 7050 section 3.1): a lying local resolver can name a wrong prefix,
    /// which sends connections to the wrong place; TLS verification of the host name still holds.
    func discoverNAT64() async {
        let epoch = state.withLock { $0.networkEpoch }
        var prefix: HTTPDNSNAT64Prefix?
        if let local = localResolver {
            do {
                let records = try await resolveWithin(
                    local, HTTPDNSNAT64Prefix.discoveryName, family: .ipv6, within: configuration.timeouts.localDNS.inSeconds)
                prefix = HTTPDNSNAT64Prefix.discover(from: records.ipv6).first
                if prefix == nil { monitor.warning("no NAT64 prefix in the answer for \(HTTPDNSNAT64Prefix.discoveryName)") }
            } catch {
                monitor.warning("NAT64 prefix discovery failed: \(HTTPDNSEngine.httpdnsError(error, host: HTTPDNSNAT64Prefix.discoveryName))")
            }
        }
        change { state in
            guard state.networkEpoch == epoch else { return }
            state.nat64Prefix = prefix
            state.nat64Discovery = nil
            if prefix == nil { autoFamily.store(FamilyCode.code(.ipv6), ordering: .relaxed) }
            // Answers stored while the discovery ran hold IPv4 addresses this network cannot reach.
            for (key, _) in state.cache.entries where key.family == .both { state.cache.remove(key) }
        }
    }

    /// `addresses` from a resolver the engine did not ask (the client's block-redirect endpoint), as
    /// this network can use them: the family `.auto` stands for, IPv4 synthesized on NAT64 networks.
    package func usableAddresses(_ addresses: [HTTPDNSIPAddress], family: HTTPDNSAddressFamily?) -> [HTTPDNSIPAddress] {
        let family = concreteFamily(family)
        return usableAddresses(addresses, family: family, prefix: nat64Prefix)
    }

    /// Addresses as this network can use them: with a NAT64 prefix, the IPv4 addresses of a `.both`
    /// answer become IPv6 (RFC 6052), after the native IPv6 ones.
    func usableAddresses(_ addresses: [HTTPDNSIPAddress], family: HTTPDNSAddressFamily, prefix: HTTPDNSNAT64Prefix?) -> [HTTPDNSIPAddress] {
        guard let prefix, family == .both, addresses.contains(where: { $0.family == .v4 }) else { return addresses }
        var result = addresses.filter { $0.family == .v6 }
        for address in addresses where address.family == .v4 {
            let synthesized = prefix.synthesize(address)
            if synthesized.family == .v6, !result.contains(synthesized) { result.append(synthesized) }
        }
        // Only non-global IPv4 (the user's own pins): nothing to synthesize, keep them as they are.
        return result.isEmpty ? addresses : result
    }

    /// Whether the rtnetlink watcher runs (``HTTPDNSConfiguration/Network/watchesChanges``).
    package var isWatchingNetwork: Bool {
        watcher.withLock { $0 != nil }
    }

    /// Starts the rtnetlink watcher that calls ``networkDidChange()``.
    func startWatching() {
        do {
            let started = try HTTPDNSNetworkWatcher(debounce: configuration.network.changeDebounce) { [weak self] in
                self?.networkDidChange()
            }
            watcher.withLock { $0 = started }
        } catch {
            monitor.warning("network watcher not started: \(error)")
        }
    }
}

/// ``HTTPDNSAddressFamily`` as a byte, for the atomic that holds what `.auto` means now.
@usableFromInline
enum FamilyCode {
    @usableFromInline static let ipv4: UInt8 = 0
    @usableFromInline static let ipv6: UInt8 = 1
    @usableFromInline static let both: UInt8 = 2

    static func code(_ family: HTTPDNSAddressFamily) -> UInt8 {
        switch family {
        case .ipv4: ipv4
        case .ipv6: ipv6
        case .both, .auto: both
        }
    }

    @usableFromInline
    static func family(_ code: UInt8) -> HTTPDNSAddressFamily {
        code == ipv4 ? .ipv4 : code == ipv6 ? .ipv6 : .both
    }
}
