import DNSWire
import HTTPDNS
import HTTPDNSCore

/// Answers the stub's queries: A and AAAA of names the engine protects through the engine
/// (HTTPDNS providers, its cache, serve-stale); every other query, and those when the engine fails
/// and ``Configuration/engineFallback`` allows, through the upstreams in order. Upstream answers go
/// through the wire cache, which serves them stale when every upstream fails (RFC 8767).
package final class DNSStubResolver: Sendable {
    /// Settings, each with its default.
    package struct Configuration: Sendable {
        /// Time limit of one upstream exchange (TCP retry included). Default 5 s.
        package var upstreamTimeout: Duration = .seconds(5)
        /// Ask the upstreams for an A/AAAA of a protected name when the engine cannot answer it.
        /// Default true; false (`--httpdns-only`) answers SERVFAIL then.
        package var engineFallback: Bool = true
        /// The wire cache's limits.
        package var cache = DNSStubCache.Configuration()
        /// When the upstreams count as down and stale answers go out at once (RFC 8767 §5).
        package var upstreamHealth = DNSStubUpstreamHealth.Configuration()
        /// Static entries (`--hosts`), answered before anything else; none by default.
        package var hosts = DNSStubHosts()

        package init() {}
    }

    let engine: HTTPDNSEngine
    let upstreams: [any DNSStubUpstream]
    let configuration: Configuration
    let cache: HTTPDNSLock<DNSStubCache>
    /// Bumped by every store, so the cache file is written only after a change.
    let cacheChanges = HTTPDNSLock(0)
    let health: HTTPDNSLock<DNSStubUpstreamHealth>
    /// Keys being refreshed in the background (at most one refresh per key).
    let refreshing = HTTPDNSLock(Set<DNSStubCache.Key>())
    private let clock = ContinuousClock()
    private let start = ContinuousClock.now

    /// - Parameters:
    ///   - engine: answers A/AAAA of protected names; its LocalDNS fallback should be off (the stub
    ///     may be the system resolver: asking it would loop), the upstreams are the fallback.
    ///   - upstreams: tried in order for everything else.
    package init(engine: HTTPDNSEngine, upstreams: [any DNSStubUpstream], configuration: Configuration = Configuration()) {
        self.engine = engine
        self.upstreams = upstreams
        self.configuration = configuration
        cache = HTTPDNSLock(DNSStubCache(configuration: configuration.cache))
        health = HTTPDNSLock(DNSStubUpstreamHealth(configuration: configuration.upstreamHealth))
    }

    /// Seconds on a monotonic clock, for the cache.
    var now: Double {
        let elapsed = clock.now - start
        return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    }

    /// The answer to `request`, never throwing: a failure is SERVFAIL with an Extended DNS Error.
    package func answer(_ request: DNSStubRequest) async -> DNSStubResponse {
        let question = request.question
        if let local = configuration.hosts.answer(question) { return local }
        let host = question.name.text()
        if question.recordClass == .IN, question.type == .A || question.type == .AAAA, engine.protects(host) {
            switch await fromEngine(host, type: question.type, name: question.name) {
            case .success(let response):
                return response
            case .failure(let error):
                guard configuration.engineFallback, !upstreams.isEmpty else {
                    return .serverFailure(.networkError, "HTTPDNS failed: \(error.code)")
                }
            }
        }
        return await fromUpstreams(request)
    }

    /// The engine's addresses as records of the name asked, with the engine's TTL.
    ///
    /// The engine keeps addresses, not the CNAME chain that led to them, so the answer is the
    /// name's own A/AAAA records (what `getaddrinfo` needs). A name without an address of the type
    /// asked (an IPv6-only name asked A) is NODATA without SOA, which clients do not cache long.
    private func fromEngine(_ host: String, type: DNSRecordType, name: DNSName) async -> Result<DNSStubResponse, HTTPDNSError> {
        do {
            let answer = try await engine.resolve(host, family: type == .AAAA ? .ipv6 : .ipv4)
            let ttl = UInt32(clamping: max(0, answer.ttl))
            let records = answer.addresses.compactMap { address -> DNSRecord? in
                switch (address.family, type) {
                case (.v4, .A): DNSRecord(name: name, ttl: ttl, data: .a(address.bytes))
                case (.v6, .AAAA): DNSRecord(name: name, ttl: ttl, data: .aaaa(address.bytes))
                default: nil
                }
            }
            return .success(DNSStubResponse(answers: records))
        } catch let error as HTTPDNSError {
            return .failure(error)
        } catch {
            return .failure(HTTPDNSError(.transport, "\(error)"))
        }
    }

    /// The cache, then the upstreams in order; every failure → the stale answer if any, else
    /// SERVFAIL with EDE 22 (every upstream timed out) or 23 (an upstream failed otherwise).
    ///
    /// With a stale answer at hand, the client does not wait for upstreams known to be failing
    /// (``DNSStubUpstreamHealth``): it gets the stale answer at once and the refresh runs in the
    /// background; otherwise each upstream gets at most the client response timer (RFC 8767 §5).
    private func fromUpstreams(_ request: DNSStubRequest) async -> DNSStubResponse {
        let start = now
        if let hit = cache.withLock({ $0.lookup(request, now: start) }) { return hit.response }
        guard !upstreams.isEmpty else { return .serverFailure(.noReachableAuthority, "no upstream configured") }
        let stale = cache.withLock { $0.lookup(request, now: start, upstreamFailed: true) }
        if let stale, health.withLock({ $0.isDown(now: start) }) {
            refreshInBackground(request)
            return stale.response
        }
        var timeout = configuration.upstreamTimeout
        if stale != nil { timeout = min(timeout, configuration.upstreamHealth.clientResponseTimer) }
        switch await exchange(request, timeout: timeout) {
        case .success(let response):
            return response
        case .failure(let failure):
            if let stale = cache.withLock({ $0.lookup(request, now: now, upstreamFailed: true) }) { return stale.response }
            return failure.response
        }
    }

    /// Refreshes `request`'s entry from the upstreams in a task of its own, once at a time per key.
    private func refreshInBackground(_ request: DNSStubRequest) {
        let key = DNSStubCache.Key(request)
        guard refreshing.withLock({ $0.insert(key).inserted }) else { return }
        Task {
            _ = await exchange(request, timeout: configuration.upstreamTimeout)
            refreshing.withLock { _ = $0.remove(key) }
        }
    }

    /// The upstreams in order, the answer stored in the cache; the failure is the SERVFAIL to send.
    private func exchange(_ request: DNSStubRequest, timeout: Duration) async -> Result<DNSStubResponse, DNSStubExchangeFailure> {
        var query = DNSMessage.makeQuery(
            name: request.question.name, type: request.question.type, recursionDesired: true,
            edns: DNSEDNS(udpPayloadSize: 1232, dnssecOK: request.dnssecOK)
        )
        query.questions[0].recordClass = request.question.recordClass
        query.checkingDisabled = request.checkingDisabled
        var failures: [String] = []
        var allTimedOut = true
        var answered = false
        for (index, upstream) in upstreams.enumerated() {
            do {
                let message = try await upstream.exchange(query, timeout: timeout)
                answered = true
                health.withLock { $0.recordAnswer() }
                let response = DNSStubResponse(upstream: message)
                // SERVFAIL/REFUSED from one upstream: the next may know better.
                if response.rcode == .serverFailure || response.rcode == .refused, index < upstreams.count - 1 {
                    failures.append("\(upstream.name): \(response.rcode)")
                    allTimedOut = false
                    continue
                }
                let stored = cache.withLock { $0.store(response, for: request, now: now) }
                if stored != nil { cacheChanges.withLock { $0 &+= 1 } }
                return .success(response)
            } catch {
                let code = (error as? HTTPDNSError)?.code
                if code != .timedOut { allTimedOut = false }
                failures.append("\(upstream.name): \(code.map { "\($0)" } ?? "\(error)")")
            }
        }
        if !answered { health.withLock { $0.recordFailure(now: now) } }
        return .failure(DNSStubExchangeFailure(
            response: .serverFailure(allTimedOut ? .noReachableAuthority : .networkError, failures.joined(separator: "; "))))
    }
}

/// The SERVFAIL for a query no upstream answered, as an `Error` for `Result`.
struct DNSStubExchangeFailure: Error {
    var response: DNSStubResponse
}
