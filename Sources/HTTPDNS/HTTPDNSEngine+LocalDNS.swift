import HTTPDNSCore

extension HTTPDNSEngine {
    /// The fallback resolver the configuration asks for.
    static func makeLocalResolver(_ configuration: HTTPDNSConfiguration) -> (any HTTPDNSResolver)? {
        switch configuration.localDNS {
        case .custom(let resolver):
            return resolver
        case .system:
            return HTTPDNSSystemResolver(timeout: configuration.timeouts.localDNS)
        case .server(let address, let port):
            return HTTPDNSUDPResolver(server: address, port: port, timeout: configuration.timeouts.localDNS)
        }
    }
}

extension HTTPDNSEngine {
    /// Resolves `host` through LocalDNS only, bypassing the cache and the providers: the last resort
    /// when every HTTPDNS address of a host refused connections.
    ///
    /// - Throws: ``HTTPDNSError``; `.invalidConfiguration` when the engine is HTTPDNS-only.
    public func resolveLocally(_ host: String, family: HTTPDNSAddressFamily? = nil) async throws -> HTTPDNSAnswer {
        let family = concreteFamily(family)
        guard !configuration.failover.httpdnsOnly, let local = localResolver else {
            throw HTTPDNSError(.invalidConfiguration, "LocalDNS fallback is disabled", host: host)
        }
        let name = HTTPDNSHostPolicy.normalize(host)
        monitor.fellBackToLocalDNS(host: name)
        return try await askLocal(local, name, family: family)
    }

    /// The static entry for `key`, if there is one with an address of its family.
    func staticAnswer(_ key: HTTPDNSCacheKey) -> HTTPDNSAnswer? {
        guard let addresses = staticEntries[key.host] else { return nil }
        let usable = addresses.filter { key.family.includes($0.family) }
        guard !usable.isEmpty else { return nil }
        return HTTPDNSAnswer(host: key.host, addresses: usable, ttl: 0, source: "static", origin: .static)
    }

    /// A name outside ``HTTPDNSConfiguration/protectedHosts``: LocalDNS alone, as the system would.
    func resolveUnprotected(_ key: HTTPDNSCacheKey) async throws -> HTTPDNSAnswer {
        guard let local = localResolver else {
            throw HTTPDNSError(.invalidConfiguration, "\(key.host) is not protected and no LocalDNS is configured", host: key.host)
        }
        do {
            return try await askLocal(local, key.host, family: key.family)
        } catch {
            throw HTTPDNSEngine.httpdnsError(error, host: key.host, source: local.name)
        }
    }

    /// One LocalDNS lookup as an answer. LocalDNS answers are what the system would have used
    /// anyway: only unusable and duplicate addresses are dropped, so that intranet names keep working.
    func askLocal(_ local: any HTTPDNSResolver, _ host: String, family: HTTPDNSAddressFamily) async throws -> HTTPDNSAnswer {
        let records = try await resolveWithin(local, host, family: family, within: configuration.timeouts.localDNS.inSeconds)
        var seen = Set<HTTPDNSIPAddress>()
        let addresses = records.addresses(for: family).filter { !$0.isUnspecified && seen.insert($0).inserted }
        guard !addresses.isEmpty else {
            throw HTTPDNSError(.noAddress, "answer holds no \(family) address", host: host, source: local.name)
        }
        return HTTPDNSAnswer(
            host: host, addresses: addresses, ttl: records.ttl ?? configuration.cache.policy.minimumTTL,
            source: local.name, origin: .localDNS)
    }
}
