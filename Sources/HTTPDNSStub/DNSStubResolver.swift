import DNSStubCore
import Dispatch
import DNSWire
import HTTPDNS
import HTTPDNSCore
import HTTPDNSOperations
import Synchronization

/// Answers the stub's queries: A and AAAA of names the engine protects through the engine
/// (HTTPDNS providers, its cache, serve-stale); every other query, and those when the engine fails
/// and ``Configuration/engineFallback`` allows, through the upstreams, ranked and hedged
/// (``DNSStubUpstreamGroup``). A name that matches a `--route` (``DNSStubRoutes``) goes to that
/// route's upstreams only, for every type, and never to the engine. Upstream answers go through the
/// wire cache, which serves them stale when every upstream fails (RFC 8767).
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
        /// Longest a client waits: a query nobody has answered by then gets SERVFAIL (EDE 22, "no
        /// answer within …") while the providers and upstreams are still asked, so that the
        /// client's retry finds their answer cached. Well inside glibc's 5 s per try (RFC 8767's
        /// client response timer, 1.8 s, is the reference: without it a blackholed upstream held
        /// every query for the whole upstream timeout and programs timed out instead). Default 1.8 s.
        package var answerDeadline: Duration = .milliseconds(1800)

        package init() {}
    }

    let engine: HTTPDNSEngine
    let upstreams: DNSStubUpstreamGroup
    let routes: DNSStubRoutes
    let routeUpstreams: [DNSStubUpstreamGroup]
    let configuration: Configuration
    /// `--metrics` and `--query-log`, when asked for.
    let metrics: DNSStubMetrics?
    let queryLog: HTTPDNSLineLog?
    let cache: HTTPDNSLock<DNSStubCache>
    /// Bumped by every store, so the cache file is written only after a change.
    let cacheChanges = HTTPDNSLock(0)
    let health: HTTPDNSLock<DNSStubUpstreamHealth>
    /// Keys being refreshed in the background (at most one refresh per key).
    let refreshing = HTTPDNSLock(Set<DNSStubCache.Key>())
    /// Bumped when what the caches hold stops being true (the network changed): the UDP thread's
    /// packet cache starts over when it sees a new value.
    package let generation = Atomic<Int>(0)
    /// Seconds for the caches, the upstream health and the groups' ranking (monotonic by default).
    let clock: any HTTPDNSClock
    /// `--hosts`, replaced whole on SIGHUP (``replaceHosts(_:)``); read under the lock only while
    /// some are configured, so the UDP fast path takes no lock for them otherwise.
    private let hosts: HTTPDNSLock<DNSStubHosts>
    private let hostsInUse: Atomic<Bool>
    /// Told, at most once a minute, when no upstream answered at all (a zero-config stub whose
    /// every upstream fails otherwise says nothing while every query gets SERVFAIL).
    private let warning: (@Sendable (String) -> Void)?
    /// When ``warning`` was last told (``now``), nil when an answer came since.
    private let lastWarned = HTTPDNSLock<Double?>(nil)
    /// The least time between two warnings.
    static let warningInterval: Double = 60
    /// Answer deadlines scheduled and not yet run.
    private let pendingDeadlines = Atomic<Int>(0)

    /// - Parameters:
    ///   - engine: answers A/AAAA of protected names; its LocalDNS fallback should be off (the stub
    ///     may be the system resolver: asking it would loop), the upstreams are the fallback.
    ///   - upstreams: asked for everything else, ranked.
    ///   - routes: names that go to other upstreams only, with those upstreams (`routeUpstreams[i]`
    ///     serves `routes.routes[i]`). Default none.
    ///   - metrics: counts every query and upstream exchange. Default none.
    ///   - queryLog: gets one ``DNSStubQueryLogLine`` per query. Default none.
    ///   - clock: what the caches, the upstreams' health and ranking read as now: it must not move
    ///     back. Default ``HTTPDNSUptimeClock`` (monotonic); tests pass an ``HTTPDNSManualClock``.
    ///   - warning: told when no upstream answered at all, with their reasons: at once the first
    ///     time, then at most once a minute until an upstream answers again. Default none.
    package init(
        engine: HTTPDNSEngine, upstreams: [any DNSStubUpstream], routes: DNSStubRoutes = DNSStubRoutes(),
        routeUpstreams: [[any DNSStubUpstream]] = [], configuration: Configuration = Configuration(),
        metrics: DNSStubMetrics? = nil, queryLog: HTTPDNSLineLog? = nil, clock: any HTTPDNSClock = HTTPDNSUptimeClock(),
        warning: (@Sendable (String) -> Void)? = nil
    ) {
        precondition(routes.routes.count == routeUpstreams.count, "one upstream list per route")
        self.engine = engine
        self.clock = clock
        self.warning = warning
        hosts = HTTPDNSLock(configuration.hosts)
        hostsInUse = Atomic(!configuration.hosts.isEmpty)
        self.upstreams = DNSStubUpstreamGroup(upstreams, metrics: metrics, clock: clock)
        self.routes = routes
        self.routeUpstreams = routeUpstreams.map { DNSStubUpstreamGroup($0, metrics: metrics, clock: clock) }
        self.configuration = configuration
        self.metrics = metrics
        self.queryLog = queryLog
        let cache = HTTPDNSLock(DNSStubCache(configuration: configuration.cache))
        self.cache = cache
        health = HTTPDNSLock(DNSStubUpstreamHealth(configuration: configuration.upstreamHealth))
        for upstream in upstreams + routeUpstreams.flatMap({ $0 }) { metrics?.register(upstream.name) }
        metrics?.observe(cacheEntries: { cache.withLock { $0.count } }, logDropped: { queryLog?.dropped ?? 0 })
    }

    /// Seconds on ``clock``, for the cache.
    var now: Double { clock.now() }

    /// Waits until every answer deadline scheduled so far has run (at most ``Configuration/answerDeadline``
    /// after the last query), or `timeout`: the daemon calls it after its drain, before it exits.
    /// - Returns: whether none is pending.
    package func waitForDeadlines(within timeout: Duration) async -> Bool {
        let end = ContinuousClock.now + timeout
        while pendingDeadlines.load(ordering: .acquiring) > 0 {
            guard ContinuousClock.now < end else { return false }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return true
    }

    /// Puts `new` in place of the `--hosts` entries (SIGHUP), for every query from now on.
    package func replaceHosts(_ new: DNSStubHosts) {
        hosts.withLock { $0 = new }
        hostsInUse.store(!new.isEmpty, ordering: .releasing)
        // The UDP thread's packet cache repeats answers made from the old entries: it starts over.
        generation.add(1, ordering: .releasing)
    }

    /// The `--hosts` answer to `question`, if any.
    private func localAnswer(_ question: DNSQuestion) -> DNSStubResponse? {
        guard hostsInUse.load(ordering: .acquiring) else { return nil }
        return hosts.withLock { $0.answer(question) }
    }

    /// The answer to `request`, never throwing: a failure is SERVFAIL with an Extended DNS Error.
    /// Counted in the metrics and written to the query log, with `client`, when those are on.
    package func answer(_ request: DNSStubRequest, client: HTTPDNSIPAddress? = nil) async -> DNSStubResponse {
        await withCheckedContinuation { continuation in
            answer(request, client: client) { continuation.resume(returning: $0) }
        }
    }

    /// The same without a task where none is needed: an upstream's answer reaches `completion` on
    /// the thread it arrived on (libcurl's loop thread for DoH), so the stub's UDP and TCP threads
    /// hand a query over and the answer goes out from there, with no hop through the task pool;
    /// the engine's answers still come from a task. `completion` is called once and must be quick.
    package func answer(
        _ request: DNSStubRequest, client: HTTPDNSIPAddress? = nil, completion: @escaping @Sendable (DNSStubResponse) -> Void
    ) {
        let began = Began(logging: queryLog != nil)
        let delivered = HTTPDNSLock(false)
        let deliver: Delivery = { [self] response, source, upstream in
            // Once: the deadline's SERVFAIL and a late answer race; the late one only fills the caches.
            guard delivered.withLock({ done in defer { done = true }; return !done }) else { return }
            record(request, client: client, response, source, upstream, began: began)
            completion(response)
        }
        let question = request.question
        if let local = localAnswer(question) { return deliver(local, .hosts, nil) }
        let milliseconds = Int(configuration.answerDeadline.inSeconds * 1000)
        // Counted until it has run, so that the daemon exits only once no deadline is pending
        // (``waitForDeadlines(within:)``): a timer running while the process exits crashed it.
        pendingDeadlines.add(1, ordering: .relaxed)
        DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(milliseconds)) { [self] in
            deliver(.serverFailure(.noReachableAuthority, "no answer within \(milliseconds) ms; still asking"), .servfail, nil)
            pendingDeadlines.subtract(1, ordering: .releasing)
        }
        let host = question.name.text()
        if let route = routes.route(for: host) { return fromUpstreams(request, routeUpstreams[route], source: .route, deliver) }
        guard isAddressQuestion(question), engine.protects(host) else { return fromUpstreams(request, upstreams, source: .upstream, deliver) }
        Task { [self] in
            switch await fromEngine(host, type: question.type, name: question.name) {
            case .success(let response):
                deliver(response, .engine, nil)
            case .failure(let error):
                guard configuration.engineFallback, !upstreams.upstreams.isEmpty else {
                    return deliver(.serverFailure(.networkError, "HTTPDNS failed: \(error.code)"), .servfail, nil)
                }
                fromUpstreams(request, upstreams, source: .upstream, deliver)
            }
        }
    }

    /// Where an answer goes: the response, where it came from, and the upstream that gave it.
    private typealias Delivery = @Sendable (DNSStubResponse, DNSStubMetrics.Source, String?) -> Void

    /// The answer to `request` when it needs no waiting: the engine's cached addresses of a
    /// protected name, or a fresh answer of the wire cache; nil when a provider or an upstream must
    /// be asked (then ``answer(_:client:)``). The UDP thread answers these itself, without a task.
    package func answerAtOnce(
        _ request: DNSStubRequest, client: HTTPDNSIPAddress? = nil
    ) -> (response: DNSStubResponse, source: DNSStubMetrics.Source)? {
        let began = Began(logging: queryLog != nil)
        let question = request.question
        let host = question.name.text()
        let response: DNSStubResponse
        let source: DNSStubMetrics.Source
        if let local = localAnswer(question) {
            (response, source) = (local, .hosts)
        } else if routes.route(for: host) == nil, isAddressQuestion(question), engine.protects(host) {
            guard let answer = engine.resolveFromCache(host, family: question.type == .AAAA ? .ipv6 : .ipv4) else { return nil }
            (response, source) = (Self.response(answer, type: question.type, name: question.name), .engine)
        } else {
            guard let hit = cache.withLock({ $0.lookup(request, now: now) }) else { return nil }
            (response, source) = (hit.response, .cache)
        }
        record(request, client: client, response, source, nil, began: began)
        return (response, source)
    }

    /// Whether the UDP thread may repeat answers from its packet cache (``DNSStubPacketCache``):
    /// not when every query must reach the query log.
    package var repeatsAnswers: Bool { queryLog == nil }

    /// Counts an answer the UDP thread repeated from its packet cache, under the source that made it.
    package func countRepeated(_ source: DNSStubMetrics.Source) {
        metrics?.query(.udp, source, repeated: true)
    }

    /// When a query began, read only for the query log.
    private struct Began {
        var time: Int64 = 0
        var instant: ContinuousClock.Instant?

        init(logging: Bool) {
            guard logging else { return }
            time = HTTPDNSLogText.now()
            instant = .now
        }
    }

    /// Counts the query and writes its query-log line, when those are on.
    private func record(
        _ request: DNSStubRequest, client: HTTPDNSIPAddress?, _ response: DNSStubResponse, _ source: DNSStubMetrics.Source,
        _ upstream: String?, began: Began
    ) {
        metrics?.query(request.transport, source)
        guard let queryLog, let instant = began.instant else { return }
        let elapsed = ContinuousClock.now - instant
        let line = DNSStubQueryLogLine(
            timeMicroseconds: began.time, client: client, transport: request.transport, name: request.question.name.text(),
            type: request.question.type, rcode: response.rcode, source: source, upstream: upstream,
            latencyMicroseconds: Int(elapsed.components.seconds) * 1_000_000 + Int(elapsed.components.attoseconds / 1_000_000_000_000))
        queryLog.log { line.append(to: &$0) }
    }

    private func isAddressQuestion(_ question: DNSQuestion) -> Bool {
        question.recordClass == .IN && (question.type == .A || question.type == .AAAA)
    }

    /// Counts a message the front answered itself (REFUSED to a stranger, FORMERR, NOTIMP).
    package func frontReplied(_ transport: DNSStubTransport, _ reason: DNSStubRequestError) {
        metrics?.query(transport, reason.code == .notAllowed ? .refused : reason.code == .rateLimited ? .ratelimited : .rejected)
    }

    /// The engine's addresses as records of the name asked, with the engine's TTL.
    ///
    /// The engine keeps addresses, not the CNAME chain that led to them, so the answer is the
    /// name's own A/AAAA records (what `getaddrinfo` needs). A name without an address of the type
    /// asked (an IPv6-only name asked A) is NODATA without SOA, which clients do not cache long.
    private func fromEngine(_ host: String, type: DNSRecordType, name: DNSName) async -> Result<DNSStubResponse, HTTPDNSError> {
        do {
            return .success(Self.response(try await engine.resolve(host, family: type == .AAAA ? .ipv6 : .ipv4), type: type, name: name))
        } catch let error as HTTPDNSError {
            return .failure(error)
        } catch {
            return .failure(HTTPDNSError(.transport, "\(error)"))
        }
    }

    /// The engine's `answer` as records of `name` of `type`, with the engine's TTL.
    private static func response(_ answer: HTTPDNSAnswer, type: DNSRecordType, name: DNSName) -> DNSStubResponse {
        let ttl = UInt32(clamping: max(0, answer.ttl))
        let records = answer.addresses.compactMap { address -> DNSRecord? in
            switch (address.family, type) {
            case (.v4, .A): DNSRecord(name: name, ttl: ttl, data: .a(address.bytes))
            case (.v6, .AAAA): DNSRecord(name: name, ttl: ttl, data: .aaaa(address.bytes))
            default: nil
            }
        }
        return DNSStubResponse(answers: records)
    }

    /// The cache, then the group's upstreams (ranked, hedged); every failure → the stale answer if
    /// any, else SERVFAIL with EDE 22 (every upstream timed out) or 23 (an upstream failed otherwise).
    ///
    /// With a stale answer at hand, the client does not wait for upstreams known to be failing
    /// (``DNSStubUpstreamHealth``): it gets the stale answer at once and the refresh runs in the
    /// background; otherwise the upstreams get at most the client response timer (RFC 8767 §5).
    private func fromUpstreams(
        _ request: DNSStubRequest, _ group: DNSStubUpstreamGroup, source: DNSStubMetrics.Source, _ deliver: @escaping Delivery
    ) {
        let start = now
        if let hit = cache.withLock({ $0.lookup(request, now: start) }) { return deliver(hit.response, .cache, nil) }
        guard !group.upstreams.isEmpty else { return deliver(.serverFailure(.noReachableAuthority, "no upstream configured"), .servfail, nil) }
        let stale = cache.withLock { $0.lookup(request, now: start, upstreamFailed: true) }
        if let stale, health.withLock({ $0.isDown(now: start) }) {
            refreshInBackground(request, group)
            return deliver(stale.response, .stale, nil)
        }
        var timeout = configuration.upstreamTimeout
        if stale != nil { timeout = min(timeout, configuration.upstreamHealth.clientResponseTimer) }
        exchange(request, group, timeout: timeout) { [self] result in
            switch result {
            case .success(let answer):
                deliver(answer.response, source, answer.upstream)
            case .failure(let failure):
                if let stale = cache.withLock({ $0.lookup(request, now: now, upstreamFailed: true) }) { return deliver(stale.response, .stale, nil) }
                deliver(failure.response, .servfail, nil)
            }
        }
    }

    /// Refreshes `request`'s entry from `group` in the background, once at a time per key.
    private func refreshInBackground(_ request: DNSStubRequest, _ group: DNSStubUpstreamGroup) {
        let key = DNSStubCache.Key(request)
        guard refreshing.withLock({ $0.insert(key).inserted }) else { return }
        exchange(request, group, timeout: configuration.upstreamTimeout) { [self] _ in
            refreshing.withLock { _ = $0.remove(key) }
        }
    }

    /// The group's upstreams, the answer stored in the cache; the failure is the SERVFAIL to send.
    private func exchange(
        _ request: DNSStubRequest, _ group: DNSStubUpstreamGroup, timeout: Duration,
        completion: @escaping @Sendable (Result<(response: DNSStubResponse, upstream: String), DNSStubExchangeFailure>) -> Void
    ) {
        var query = DNSMessage.makeQuery(
            name: request.question.name, type: request.question.type, recursionDesired: true,
            edns: DNSEDNS(udpPayloadSize: 1232, dnssecOK: request.dnssecOK)
        )
        query.questions[0].recordClass = request.question.recordClass
        query.checkingDisabled = request.checkingDisabled
        group.exchange(query, timeout: timeout) { [self] outcome in
            switch outcome {
            case .answer(let response, let upstream):
                health.withLock { $0.recordAnswer() }
                if warning != nil { lastWarned.withLock { $0 = nil } }
                let stored = cache.withLock { $0.store(response, for: request, now: now) }
                if stored != nil { cacheChanges.withLock { $0 &+= 1 } }
                completion(.success((response, upstream)))
            case .failed(let failures, let allTimedOut):
                // No upstream answered at all (a SERVFAIL from one comes back as an answer).
                health.withLock { $0.recordFailure(now: now) }
                warnOnce(failures)
                completion(.failure(DNSStubExchangeFailure(
                    response: .serverFailure(allTimedOut ? .noReachableAuthority : .networkError, failures.joined(separator: "; ")))))
            }
        }
    }
}

extension DNSStubResolver {
    /// Tells ``warning`` that no upstream answered: the first time at once, then at most once per
    /// ``warningInterval`` until one answers again.
    fileprivate func warnOnce(_ failures: [String]) {
        guard let warning else { return }
        let time = now
        let due = lastWarned.withLock { last -> Bool in
            if let last, time - last < Self.warningInterval { return false }
            last = time
            return true
        }
        if due { warning("no upstream answered (\(failures.joined(separator: "; "))): queries get SERVFAIL or stale answers until one does") }
    }
}

/// The SERVFAIL for a query no upstream answered, as an `Error` for `Result`.
struct DNSStubExchangeFailure: Error {
    var response: DNSStubResponse
}
