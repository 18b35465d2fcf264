import Foundation
import HTTPDNSCore
import HTTPDNSTransport

/// How ``HTTPDNSEngine/checkHijack(_:family:check:)`` checks.
public struct HTTPDNSHijackCheck: Sendable, Hashable {
    /// Count any disagreement between LocalDNS and HTTPDNS as hijacking (unless a probe shows
    /// LocalDNS's address is a valid edge). Default false. Private answers being allowed
    /// (``HTTPDNSAnswerHygiene/allowPrivate``) counts a disagreement too, for a reason of its own
    /// (``HTTPDNSHijackReport/Reason/privateAnswersAllowed``); the report says `strict` only when
    /// this was asked.
    public var strict: Bool = false
    /// Confirm by connecting: a TLS handshake for the host at each side's first address on this port
    /// (443 for HTTPS sites), verified against ``HTTPDNSConfiguration/trust``. Default nil: no probe.
    public var probePort: Int? = nil
    /// Time limit of each probe connection. Default 5 s.
    public var probeTimeout: Duration = .seconds(5)

    /// - Parameters:
    ///   - strict: count a disagreement as hijacking. Default false.
    ///   - probePort: the port to confirm by connecting on. Default nil.
    public init(strict: Bool = false, probePort: Int? = nil) {
        self.strict = strict
        self.probePort = probePort
    }
}

extension HTTPDNSEngine {
    /// Resolves `host` through LocalDNS and through the HTTPDNS providers (bypassing the cache),
    /// compares the answers, optionally confirms by connecting, and concludes: the same evidence,
    /// verdict and conclusion (``HTTPDNSHijackReport/isHijack`` with its
    /// ``HTTPDNSHijackReport/reason``) as `httpdns check`.
    ///
    /// - Parameters:
    ///   - family: the address family to compare. Default the configuration's.
    ///   - check: strictness and the probe. Default: not strict, no probe.
    public func checkHijack(
        _ host: String, family: HTTPDNSAddressFamily? = nil, check: HTTPDNSHijackCheck = .init()
    ) async -> HTTPDNSHijackReport {
        let family = concreteFamily(family)
        let name = HTTPDNSHostPolicy.normalize(host)
        async let localSide = localEvidence(name, family: family)
        async let httpdnsSide = httpdnsEvidence(name, family: family)
        let (local, httpdns) = await (localSide, httpdnsSide)
        var probe: HTTPDNSHijackProbe?
        if let port = check.probePort {
            async let localResult = probeTLS(name, local.addresses.first, port: port, timeout: check.probeTimeout)
            async let httpdnsResult = probeTLS(name, httpdns.addresses.first, port: port, timeout: check.probeTimeout)
            probe = HTTPDNSHijackProbe(port: port, local: await localResult, httpdns: await httpdnsResult)
        }
        return HTTPDNSHijackReport(
            host: name, local: local, httpdns: httpdns, probe: probe, strict: check.strict,
            privateAnswersAllowed: configuration.hygiene.allowPrivate)
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

    /// The transport probes go through (the shared one: probes are rare and short).
    private var probeTransport: HTTPTransport { .shared }

    /// A `HEAD` over TLS for `host` pinned to `address`, verified as any request is.
    private func probeTLS(_ host: String, _ address: HTTPDNSIPAddress?, port: Int, timeout: Duration) async -> HTTPDNSHijackProbe.Result? {
        guard let address, let url = URL(string: "https://\(host):\(port)/") else { return nil }
        var request = HTTPTransportRequest(url: url, method: "HEAD")
        request.pinnedAddresses = [address]
        request.trust = configuration.trust
        request.timeouts = .init(connect: min(timeout, .seconds(3)), total: timeout, idle: timeout)
        do {
            let response = try await probeTransport.send(request)
            return .init(address: address, result: .verified, status: response.statusCode)
        } catch {
            switch error.code {
            case .serverCertificateUntrusted, .secureConnectionFailed:
                return .init(address: address, result: .notVerified, detail: error.detail)
            default:
                return .init(address: address, result: .unreachable, detail: error.detail)
            }
        }
    }
}
