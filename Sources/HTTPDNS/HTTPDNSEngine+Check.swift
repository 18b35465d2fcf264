import HTTPDNSCore

extension HTTPDNSEngine {
    /// Resolves `host` through LocalDNS and through the HTTPDNS providers (bypassing the cache) and
    /// compares the answers: agreement, disagreement, bogon answers, or a name LocalDNS hides.
    public func checkHijack(_ host: String, family: HTTPDNSAddressFamily? = nil) async -> HTTPDNSHijackReport {
        let family = concreteFamily(family)
        let name = HTTPDNSHostPolicy.normalize(host)
        async let localSide = localEvidence(name, family: family)
        async let httpdnsSide = httpdnsEvidence(name, family: family)
        return HTTPDNSHijackReport(host: name, local: await localSide, httpdns: await httpdnsSide)
    }

    private func localEvidence(_ host: String, family: HTTPDNSAddressFamily) async -> HTTPDNSHijackReport.Side {
        guard let local = localResolver else {
            return .init(source: "none", addresses: [], error: "no LocalDNS configured", errorCode: "invalidConfiguration")
        }
        do {
            let records = try await resolveWithin(local, host, family: family, within: configuration.timeouts.localDNS.inSeconds)
            return .init(source: local.name, addresses: records.addresses(for: family), ttl: records.ttl)
        } catch {
            let failure = HTTPDNSEngine.httpdnsError(error, host: host, source: local.name)
            return .init(source: local.name, addresses: [], error: failure.description, errorCode: failure.code.description)
        }
    }

    private func httpdnsEvidence(_ host: String, family: HTTPDNSAddressFamily) async -> HTTPDNSHijackReport.Side {
        var failures: [String] = []
        var lastCode = "allAttemptsFailed"
        for provider in orderedProviders() {
            do {
                let records = try await resolveWithin(provider, host, family: family, within: configuration.timeouts.perAttempt.inSeconds)
                let kept = configuration.hygiene.filter(records, family: family).kept
                if !kept.isEmpty {
                    return .init(source: provider.name, addresses: kept, ttl: records.ttl)
                }
                failures.append("\(provider.name): no usable address")
                lastCode = HTTPDNSError.Code.noAddress.description
            } catch {
                let failure = HTTPDNSEngine.httpdnsError(error, host: host, source: provider.name)
                failures.append(failure.description)
                lastCode = failure.code.description
            }
        }
        return .init(source: "httpdns", addresses: [], error: failures.joined(separator: "; "), errorCode: lastCode)
    }
}
