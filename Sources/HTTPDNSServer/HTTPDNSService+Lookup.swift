import Dispatch
import HTTPDNS
import HTTPDNSCore

/// What the service knows about one name, before it is put into a wire format.
struct HTTPDNSServiceAnswer: Sendable {
    enum Status: Sendable {
        /// The name exists; the address lists may still be empty (NODATA for that family).
        case found
        /// The name does not exist (NXDOMAIN).
        case nameError
        /// Upstream failed; nothing may be cached (SERVFAIL, HTTP 502).
        case failed
    }

    /// One CNAME link followed inside the zone.
    struct Alias: Sendable {
        var owner: String
        var target: String
        var ttl: Int
    }

    var status: Status
    /// The name asked about, normalised.
    var host: String
    var aliases: [Alias] = []
    var ipv4: [HTTPDNSIPAddress] = []
    var ipv6: [HTTPDNSIPAddress] = []
    /// TTL of the answer as a whole: the smallest along the CNAME chain (what the text formats give).
    var ttl: Int
    /// TTL of the address records themselves (what DNS gives them, the chain links having their own).
    var addressTTL: Int = 0
    /// True when every part of the answer came from the zone (DNS AA bit).
    var authoritative: Bool
    /// The zone apex for the SOA of a negative answer, when the name lies in the zone.
    var apex: String?
    /// Where the answer came from, for metrics and the access log (nil: no lookup was made).
    var cacheOutcome: HTTPDNSServerMetrics.CacheOutcome?
    /// What the upstream lookup did, when one was needed.
    var upstreamOutcome: HTTPDNSServerMetrics.UpstreamOutcome?

    /// The addresses of `family`, IPv4 first.
    func addresses(_ family: HTTPDNSAddressFamily) -> [HTTPDNSIPAddress] {
        switch family {
        case .ipv4: ipv4
        case .ipv6: ipv6
        case .both, .auto: ipv4 + ipv6
        }
    }
}

extension HTTPDNSService {
    /// Looks `host` up in the zone, following CNAMEs inside it, then upstream.
    ///
    /// Blocks the calling (connection) thread while an upstream lookup runs.
    ///
    /// - Parameter clientSubnet: the client's subnet, sent upstream as EDNS Client Subnet
    ///   (``clientSubnet(of:)``). Default nil.
    func lookup(_ host: String, family: HTTPDNSAddressFamily, clientSubnet: HTTPDNSClientSubnet? = nil) -> HTTPDNSServiceAnswer {
        let name = HTTPDNSHostPolicy.normalize(host)
        let zone = configuration.zone
        var answer = HTTPDNSServiceAnswer(status: .found, host: name, ttl: 0, authoritative: true, cacheOutcome: .zone)
        var current = name
        var chainTTL = Int.max
        for _ in 0...max(0, configuration.limits.maxCNAMEChain) {
            if let match = zone.match(current) {
                let entry = match.entry
                chainTTL = min(chainTTL, entry.ttl)
                if let target = entry.cname {
                    answer.aliases.append(.init(owner: current, target: target, ttl: entry.ttl))
                    current = target
                    continue
                }
                answer.ipv4 = family.includes(.v4) ? entry.ipv4 : []
                answer.ipv6 = family.includes(.v6) ? entry.ipv6 : []
                answer.ttl = chainTTL
                answer.addressTTL = entry.ttl
                if answer.ipv4.isEmpty, answer.ipv6.isEmpty { answer.apex = zone.apex(for: current) }
                return answer
            }
            if engine != nil, HTTPDNSHostPolicy.isValidHostName(current), !HTTPDNSIPAddress.isLiteral(current) {
                var upstream = upstreamLookup(current, family: family, clientSubnet: clientSubnet)
                upstream.host = name
                upstream.aliases = answer.aliases
                upstream.addressTTL = upstream.ttl
                upstream.ttl = min(upstream.ttl, chainTTL)
                return upstream
            }
            answer.apex = zone.apex(for: current)
            answer.ttl = configuration.limits.negativeTTL
            // An apex exists even without an entry of its own: NODATA, not NXDOMAIN.
            if !zone.isApex(current) { answer.status = .nameError }
            return answer
        }
        // A chain longer than allowed is a broken zone: fail rather than answer half of it.
        return HTTPDNSServiceAnswer(status: .failed, host: name, ttl: 0, authoritative: false)
    }

    /// Asks the engine, mapping its errors to DNS outcomes; a name that failed within
    /// ``Upstream/failureTTL`` fails at once (`.negativeCached`).
    func upstreamLookup(_ host: String, family: HTTPDNSAddressFamily, clientSubnet: HTTPDNSClientSubnet? = nil) -> HTTPDNSServiceAnswer {
        guard let engine else { return HTTPDNSServiceAnswer(status: .nameError, host: host, ttl: 0, authoritative: false) }
        let negativeTTL = configuration.limits.negativeTTL
        let failed = HTTPDNSServiceAnswer(
            status: .failed, host: host, ttl: 0, authoritative: false, cacheOutcome: .miss, upstreamOutcome: .failed)
        let key = HTTPDNSCacheKey(host: host, family: family, clientSubnet: clientSubnet)
        let failureTTL = configuration.upstream.failureTTL
        if upstreamFailures.withLock({ $0.contains(key, now: .now) }) {
            var answer = failed
            answer.upstreamOutcome = .negativeCached
            return answer
        }
        let limit = configuration.upstream.timeouts.httpdnsBudget.inSeconds + 5
        let answer = Self.waitFor(seconds: limit, fallback: failed) {
            do {
                let found = try await engine.resolve(host, family: family, clientSubnet: clientSubnet)
                let cache: HTTPDNSServerMetrics.CacheOutcome = found.isStale ? .stale : found.fromCache ? .hit : .miss
                return HTTPDNSServiceAnswer(
                    status: .found, host: host, ipv4: found.addresses.filter { $0.family == .v4 },
                    ipv6: found.addresses.filter { $0.family == .v6 }, ttl: max(0, found.ttl), authoritative: false,
                    cacheOutcome: cache, upstreamOutcome: cache == .hit ? nil : .ok)
            } catch let error as HTTPDNSError {
                var answer = failed
                answer.ttl = negativeTTL
                let codes = error.attempts.isEmpty ? [error.code] : error.attempts.map(\.error.code)
                if codes.allSatisfy({ $0 == .nameNotFound }) {
                    answer.status = .nameError
                    answer.upstreamOutcome = .ok
                } else if codes.allSatisfy({ $0 == .nameNotFound || $0 == .noAddress }) {
                    answer.status = .found
                    answer.upstreamOutcome = .ok
                }
                return answer
            } catch {
                return failed
            }
        }
        if answer.status == .failed {
            upstreamFailures.withLock { $0.insert(key, ttl: failureTTL, now: .now) }
        }
        return answer
    }

    /// Runs `operation` on the cooperative pool and blocks this (non-pool) thread until it ends,
    /// or `seconds` pass, in which case `fallback` is returned.
    static func waitFor<T: Sendable>(
        seconds: Double, fallback: T, _ operation: @escaping @Sendable () async -> T
    ) -> T {
        let semaphore = DispatchSemaphore(value: 0)
        let box = HTTPDNSLock<T?>(nil)
        let task = Task {
            let value = await operation()
            box.withLock { $0 = value }
            semaphore.signal()
        }
        guard semaphore.wait(timeout: .now() + seconds) == .success else {
            task.cancel()
            return fallback
        }
        return box.withLock { $0 } ?? fallback
    }
}
