import DNSWire
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
    /// Looks `host` up in the zone, following CNAMEs inside it, then in the upstream answers fetched
    /// for this request. Never waits: a name that needs upstream is noted in `lookups.missing` and
    /// answered as failed for now; the request is then answered again once those are fetched (a
    /// name that failed within ``Upstream/failureTTL`` fails at once, `.negativeCached`).
    ///
    /// - Parameter clientSubnet: the client's subnet, sent upstream as EDNS Client Subnet
    ///   (``clientSubnet(of:)``). Default nil.
    func lookup(
        _ host: String, family: HTTPDNSAddressFamily, clientSubnet: HTTPDNSClientSubnet? = nil, _ lookups: HTTPDNSServiceLookups
    ) -> HTTPDNSServiceAnswer {
        let answer = answer(host, family: family, clientSubnet: clientSubnet, lookups)
        lookups.note(answer, family: family)
        return answer
    }

    private func answer(
        _ host: String, family: HTTPDNSAddressFamily, clientSubnet: HTTPDNSClientSubnet?, _ lookups: HTTPDNSServiceLookups
    ) -> HTTPDNSServiceAnswer {
        let name = HTTPDNSHostPolicy.normalize(host)
        let zone = lookups.zone
        var answer = HTTPDNSServiceAnswer(status: .found, host: name, ttl: 0, authoritative: true, cacheOutcome: .zone)
        var current = name
        var chainTTL = Int.max
        for _ in 0...max(0, configuration.limits.maxCNAMEChain) {
            if let match = zone.match(current) {
                let entry = lookups.entry(match.entry)
                chainTTL = min(chainTTL, entry.ttl)
                if let target = entry.cname {
                    answer.aliases.append(.init(owner: current, target: target, ttl: entry.ttl))
                    current = target
                    continue
                }
                // The one place where zone addresses become the answer.
                let view = lookups.viewName
                // The check is the entry's own: a view gives other records, checked the same way.
                let check = match.entry.check
                answer.ipv4 = family.includes(.v4) ? answerAddresses(match.key, view: view, entry.ipv4, check: check, lookups) : []
                answer.ipv6 = family.includes(.v6) ? answerAddresses(match.key, view: view, entry.ipv6, check: check, lookups) : []
                answer.ttl = chainTTL
                answer.addressTTL = entry.ttl
                if answer.ipv4.isEmpty, answer.ipv6.isEmpty { answer.apex = zone.apex(for: current) }
                return answer
            }
            if engine != nil, HTTPDNSHostPolicy.isValidHostName(current), !HTTPDNSIPAddress.isLiteral(current) {
                let key = HTTPDNSCacheKey(host: current, family: family, clientSubnet: clientSubnet)
                var upstream: HTTPDNSServiceAnswer
                if let known = lookups.known[key] {
                    upstream = known
                } else if upstreamFailures.withLock({ $0.contains(key, now: .now) }) {
                    upstream = HTTPDNSServiceAnswer(
                        status: .failed, host: current, ttl: 0, authoritative: false, cacheOutcome: .miss,
                        upstreamOutcome: .negativeCached)
                } else {
                    if !lookups.missing.contains(key) { lookups.missing.append(key) }
                    return HTTPDNSServiceAnswer(status: .failed, host: name, ttl: 0, authoritative: false)
                }
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

    /// Asks the engine, mapping its errors to DNS outcomes; gives up (failed) after the upstream
    /// budget and 5 s more, should the engine not return. A failure is remembered for
    /// ``Upstream/failureTTL``.
    func upstreamLookup(_ key: HTTPDNSCacheKey) async -> HTTPDNSServiceAnswer {
        let host = key.host
        guard let engine else { return HTTPDNSServiceAnswer(status: .nameError, host: host, ttl: 0, authoritative: false) }
        let negativeTTL = configuration.limits.negativeTTL
        let failed = HTTPDNSServiceAnswer(
            status: .failed, host: host, ttl: 0, authoritative: false, cacheOutcome: .miss, upstreamOutcome: .failed)
        let limit = configuration.upstream.timeouts.httpdnsBudget.inSeconds + 5
        let answer = await withTaskGroup(of: HTTPDNSServiceAnswer?.self) { group in
            group.addTask {
                do {
                    let found = try await engine.resolve(host, family: key.family, clientSubnet: key.clientSubnet)
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
            group.addTask {
                try? await Task.sleep(for: .milliseconds(Int64(limit * 1000)))
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first ?? failed
        }
        if answer.status == .failed {
            let failureTTL = configuration.upstream.failureTTL
            upstreamFailures.withLock { $0.insert(key, ttl: failureTTL, now: .now) }
        }
        return answer
    }

    /// Fetches every name a first pass found missing, concurrently.
    func fetchMissing(_ keys: [HTTPDNSCacheKey]) async -> [HTTPDNSCacheKey: HTTPDNSServiceAnswer] {
        await withTaskGroup(of: (HTTPDNSCacheKey, HTTPDNSServiceAnswer).self) { group in
            for key in keys {
                group.addTask { (key, await self.upstreamLookup(key)) }
            }
            var answers: [HTTPDNSCacheKey: HTTPDNSServiceAnswer] = [:]
            for await (key, answer) in group { answers[key] = answer }
            return answers
        }
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

/// One request's view of the names: the zone it started with (a reload does not change an answer
/// halfway), upstream answers fetched so far, and the names still to fetch. Used by one thread at a
/// time: the loop thread for the first pass, then the task that fetched what was missing.
final class HTTPDNSServiceLookups {
    let zone: HTTPDNSZone
    /// The views `zone` was checked against.
    let views: HTTPDNSViewMatcher
    /// The view this request is answered for (``HTTPDNSService/selectView(_:_:)``); the default
    /// view until a handler picks one.
    var view: HTTPDNSViewMatcher.Match
    /// Whether an entry with records per view was consulted: the answer then depends on the view,
    /// and a Client Subnet answer carries the view's scope (else scope 0, RFC 7871 §7.2.1).
    var usedViews = false
    /// Whether a handler picked the view (the access log and metrics name it then).
    var viewSelected = false
    /// The encoded wire answers of `zone` (nil: none are kept, as in tests of the lookups alone).
    let wireAnswers: HTTPDNSWireAnswerCache?
    /// The origins down when the request started, read once.
    let health: HTTPDNSHealthSnapshot
    /// An answer listed addresses that are down because all of a family were (nothing to keep).
    var failedOpen = false
    /// Whether failure-report decisions changed an answer (then it is not kept as a wire answer).
    var reordered = false
    var known: [HTTPDNSCacheKey: HTTPDNSServiceAnswer]
    var missing: [HTTPDNSCacheKey] = []
    // What the answer was made of, for the metrics and the access log.
    var name: String?
    var type: String?
    var rcode: DNSResponseCode?
    var answers = 0
    var encrypted = false
    var cacheOutcomes: HTTPDNSServerMetrics.Outcomes<HTTPDNSServerMetrics.CacheOutcome> = []
    var upstreamOutcomes: HTTPDNSServerMetrics.Outcomes<HTTPDNSServerMetrics.UpstreamOutcome> = []
    var firstCacheOutcome: HTTPDNSServerMetrics.CacheOutcome?

    /// What the answer was made of, for the metrics and the access log, as one value.
    struct Description: Sendable {
        var name: String?
        var type: String?
        var rcode: DNSResponseCode?
        var answers: Int
        var cacheOutcomes: HTTPDNSServerMetrics.Outcomes<HTTPDNSServerMetrics.CacheOutcome>
        var upstreamOutcomes: HTTPDNSServerMetrics.Outcomes<HTTPDNSServerMetrics.UpstreamOutcome>
        var firstCacheOutcome: HTTPDNSServerMetrics.CacheOutcome?
    }

    var description: Description {
        get {
            Description(
                name: name, type: type, rcode: rcode, answers: answers, cacheOutcomes: cacheOutcomes,
                upstreamOutcomes: upstreamOutcomes, firstCacheOutcome: firstCacheOutcome)
        }
        set {
            (name, type, rcode, answers) = (newValue.name, newValue.type, newValue.rcode, newValue.answers)
            (cacheOutcomes, upstreamOutcomes) = (newValue.cacheOutcomes, newValue.upstreamOutcomes)
            firstCacheOutcome = newValue.firstCacheOutcome
        }
    }

    /// Notes the question and the DNS answer of a DoH request.
    func described(_ question: DNSQuestion, _ reply: HTTPDNSServiceReply) {
        name = reply.name.isEmpty ? question.name.text(trailingDot: false) : reply.name
        type = question.type.description
        rcode = reply.rcode
        answers = reply.answers.count
    }

    /// Notes one name's answer.
    func note(_ answer: HTTPDNSServiceAnswer, family: HTTPDNSAddressFamily) {
        if name == nil {
            name = answer.host
            type = family == .ipv4 ? "A" : family == .ipv6 ? "AAAA" : "A,AAAA"
        }
        if answer.status == .found { answers += answer.ipv4.count + answer.ipv6.count }
        if let outcome = answer.cacheOutcome {
            cacheOutcomes.add(outcome)
            if firstCacheOutcome == nil { firstCacheOutcome = outcome }
        }
        if let outcome = answer.upstreamOutcome { upstreamOutcomes.add(outcome) }
    }

    init(
        zone: HTTPDNSZone, views: HTTPDNSViewMatcher = .init(), wireAnswers: HTTPDNSWireAnswerCache? = nil,
        health: HTTPDNSHealthSnapshot = .init(),
        known: [HTTPDNSCacheKey: HTTPDNSServiceAnswer] = [:]
    ) {
        self.zone = zone
        self.views = views
        self.view = views.match(nil)
        self.wireAnswers = wireAnswers
        self.health = health
        self.known = known
    }

    /// The name of the view this request is answered for.
    var viewName: String { views.names[view.index] }

    /// `entry` as this request's view sees it.
    func entry(_ entry: HTTPDNSZone.Entry) -> HTTPDNSZone.Entry {
        guard !entry.views.isEmpty else { return entry }
        usedViews = true
        return entry.forView(viewName)
    }
}
