import DNSStubCore
import DNSWire
import HTTPDNSCore

/// Upstreams asked for the same names (the default ones, or one `--route`'s), with their ranking:
/// a query goes to the cheapest (``DNSStubUpstreamRanking``); when it has not answered within its
/// usual time (SRTT + 4·RTTVAR) the next is asked too, and the first good answer wins (the others
/// are cancelled and count as slow). A failure (error, timeout, SERVFAIL, REFUSED) asks the next at
/// once. Each outcome updates the ranking and the metrics.
package final class DNSStubUpstreamGroup: Sendable {
    /// What the group got.
    package enum Outcome: Sendable {
        /// A good answer, or the last SERVFAIL/REFUSED when no upstream did better.
        case answer(DNSStubResponse, upstream: String)
        /// No answer at all: each upstream's failure, and whether every one was a timeout.
        case failed([String], allTimedOut: Bool)
    }

    package let upstreams: [any DNSStubUpstream]
    private let ranking: HTTPDNSLock<DNSStubUpstreamRanking>
    private let metrics: DNSStubMetrics?
    /// What the ranking reads as now (the resolver's clock).
    private let clock: any HTTPDNSClock

    /// - Parameter clock: must not move back. Default ``HTTPDNSUptimeClock`` (monotonic).
    package init(
        _ upstreams: [any DNSStubUpstream], configuration: DNSStubUpstreamRanking.Configuration = .init(), metrics: DNSStubMetrics? = nil,
        clock: any HTTPDNSClock = HTTPDNSUptimeClock()
    ) {
        self.upstreams = upstreams
        self.metrics = metrics
        self.clock = clock
        ranking = HTTPDNSLock(DNSStubUpstreamRanking(count: upstreams.count, configuration: configuration))
    }

    /// The ranking as it stands; replaced as a whole when the network changes (``DNSStubNetworkChange``).
    package var currentRanking: DNSStubUpstreamRanking {
        get { ranking.withLock { $0 } }
        set { ranking.withLock { $0 = newValue } }
    }

    /// Seconds on ``clock``.
    var now: Double { clock.now() }

    /// Asks the upstreams, hedged, within `timeout` per exchange; cancelling the calling task
    /// cancels the exchanges under way.
    package func exchange(_ query: DNSMessage, timeout: Duration) async -> Outcome {
        let cancellation = HTTPDNSLock<(cancelled: Bool, exchange: DNSStubGroupExchange?)>((false, nil))
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let exchange = DNSStubGroupExchange(group: self, query: query, timeout: timeout) { continuation.resume(returning: $0) }
                let cancelled = cancellation.withLock { state -> Bool in
                    state.exchange = exchange
                    return state.cancelled
                }
                exchange.begin()
                if cancelled { exchange.cancel() }
            }
        } onCancel: {
            cancellation.withLock { state -> DNSStubGroupExchange? in
                state.cancelled = true
                return state.exchange
            }?.cancel()
        }
    }

    /// The same without a task: `completion` is called once, on the thread where the deciding
    /// answer or failure arrived (libcurl's loop thread for DoH), and must be quick.
    package func exchange(_ query: DNSMessage, timeout: Duration, completion: @escaping @Sendable (Outcome) -> Void) {
        DNSStubGroupExchange(group: self, query: query, timeout: timeout, completion: completion).begin()
    }

    /// The order to ask the upstreams in, now.
    func order() -> [Int] {
        ranking.withLock { $0.order(now: now) }
    }

    /// How long to wait on `index` before asking the next too, in seconds.
    func hedgeDelay(_ index: Int) -> Double {
        ranking.withLock { $0.hedgeDelay(index) }
    }

    /// A good answer from `index` after `elapsed` seconds: the smoothed RTT, counted.
    func recordAnswer(_ index: Int, elapsed: Double) {
        let srtt = ranking.withLock { ranking -> Double in
            ranking.recordSuccess(index, rtt: elapsed, now: now)
            return ranking.entries[index].smoothedRTT ?? elapsed
        }
        metrics?.upstream(upstreams[index].name, .answered, smoothedRTT: srtt)
    }

    /// A failure of `index` (`elapsed` seconds for a timeout, error or lost race), counted as `kind`.
    func recordFailure(_ index: Int, elapsed: Double?, _ kind: DNSStubMetrics.Result) {
        ranking.withLock { $0.recordFailure(index, elapsed: elapsed, now: now) }
        metrics?.upstream(upstreams[index].name, kind)
    }

    /// A hedge: `index` was slower than usual and the next was asked too.
    func recordHedge(_ index: Int) {
        metrics?.hedged(upstreams[index].name)
    }
}

/// One query through a ``DNSStubUpstreamGroup``: asks the cheapest upstream, the next at a failure
/// or when the one asked is slower than its usual (a timer task, only when there is a next), and
/// ends at the first good answer (the others cancelled, counted as slow) or when every upstream
/// has failed. Results arrive on any thread; the state is under a lock and the completion is
/// called once, outside it.
final class DNSStubGroupExchange: Sendable {
    private struct State {
        var order: [Int] = []
        var next = 0
        /// Upstreams asked and not yet finished: when each was asked, and what cancels it.
        var started: [Int: (time: Double, cancellation: DNSStubCancellation)] = [:]
        var hedges: [Task<Void, Never>] = []
        var failures: [String] = []
        var allTimedOut = true
        var lastBad: (DNSStubResponse, String)?
        var completion: (@Sendable (DNSStubUpstreamGroup.Outcome) -> Void)?
    }

    private let group: DNSStubUpstreamGroup
    private let query: DNSMessage
    private let timeout: Duration
    private let state: HTTPDNSLock<State>

    init(group: DNSStubUpstreamGroup, query: DNSMessage, timeout: Duration, completion: @escaping @Sendable (DNSStubUpstreamGroup.Outcome) -> Void) {
        self.group = group
        self.query = query
        self.timeout = timeout
        state = HTTPDNSLock(State(order: group.order(), completion: completion))
    }

    func begin() {
        guard !state.withLock({ $0.order.isEmpty }) else {
            finish { state in .failed(state.failures, allTimedOut: false) }
            return
        }
        launchNext()
    }

    /// Cancels every exchange under way; the completion gets what has been gathered so far.
    func cancel() {
        finish { state in
            if let (response, name) = state.lastBad { return .answer(response, upstream: name) }
            return .failed(state.failures + ["cancelled"], allTimedOut: false)
        }
    }

    /// Asks the next upstream in order, with a hedge timer when one is left after it.
    private func launchNext() {
        let launch = state.withLock { state -> (index: Int, hedge: Bool)? in
            guard state.completion != nil, state.next < state.order.count else { return nil }
            let index = state.order[state.next]
            state.next += 1
            return (index, state.next < state.order.count)
        }
        guard let (index, hedged) = launch else { return }
        let begun = group.now
        // Registered before the exchange starts: its completion may come at once, on this thread.
        state.withLock { $0.started[index] = (begun, DNSStubCancellation {}) }
        let cancellation = group.upstreams[index].exchange(query, timeout: timeout) { [self] result in
            finished(index, result)
        }
        // Kept to cancel it later; cancelled now if the whole exchange ended meanwhile (an
        // upstream that already finished needs neither).
        let ended = state.withLock { state -> Bool in
            guard state.started[index] != nil else { return state.completion == nil }
            state.started[index]?.cancellation = cancellation
            return false
        }
        if ended { cancellation.cancel() }
        guard hedged else { return }
        let delay = group.hedgeDelay(index)
        let timer = Task { [self] in
            try? await Task.sleep(for: .microseconds(Int64(delay * 1e6)))
            guard !Task.isCancelled else { return }
            hedge(index)
        }
        let keep = state.withLock { state -> Bool in
            guard state.completion != nil else { return false }
            state.hedges.append(timer)
            return true
        }
        if !keep { timer.cancel() }
    }

    /// `index`'s timer fired: when it is still out, the next upstream is asked too.
    private func hedge(_ index: Int) {
        guard state.withLock({ $0.completion != nil && $0.started[index] != nil && $0.next < $0.order.count }) else { return }
        group.recordHedge(index)
        launchNext()
    }

    private func finished(_ index: Int, _ result: Result<DNSMessage, any Error>) {
        guard let begun = state.withLock({ $0.completion == nil ? nil : $0.started.removeValue(forKey: index)?.time }) else { return }
        let name = group.upstreams[index].name
        let elapsed = group.now - begun
        switch result {
        case .success(let message):
            let response = DNSStubResponse(upstream: message)
            if response.rcode == .serverFailure || response.rcode == .refused {
                group.recordFailure(index, elapsed: nil, .servfail)
                state.withLock { state in
                    state.failures.append("\(name): \(response.rcode)")
                    state.allTimedOut = false
                    state.lastBad = (response, name)
                }
            } else {
                group.recordAnswer(index, elapsed: elapsed)
                // The others lost the race: slower than this one, counted so.
                finish(losers: true) { _ in .answer(response, upstream: name) }
                return
            }
        case .failure(let error):
            let coded = error as? HTTPDNSError
            let code = coded?.code
            group.recordFailure(index, elapsed: elapsed, code == .timedOut ? .timeout : .error)
            // The code, and for a failure other than a timeout what happened (a refused
            // connection, a certificate not valid for the name): the EDE text and the warning
            // tell the operator which.
            let text = coded.map { $0.code == .timedOut || $0.detail.isEmpty ? "\($0.code)" : "\($0.code) (\($0.detail.prefix(100)))" } ?? "\(error)"
            state.withLock { state in
                if code != .timedOut { state.allTimedOut = false }
                state.failures.append("\(name): \(text)")
            }
        }
        launchNext()
        let exhausted = state.withLock { $0.started.isEmpty && $0.next >= $0.order.count }
        guard exhausted else { return }
        finish { state in
            if let (response, name) = state.lastBad { return .answer(response, upstream: name) }
            return .failed(state.failures, allTimedOut: state.allTimedOut)
        }
    }

    /// Ends the exchange once: cancels what is still out (counted as slow when `losers`) and the
    /// hedge timers, and calls the completion with `outcome`.
    private func finish(losers: Bool = false, _ outcome: (State) -> DNSStubUpstreamGroup.Outcome) {
        let ended = state.withLock { state -> (DNSStubUpstreamGroup.Outcome, @Sendable (DNSStubUpstreamGroup.Outcome) -> Void, [Int: (time: Double, cancellation: DNSStubCancellation)], [Task<Void, Never>])? in
            guard let completion = state.completion else { return nil }
            state.completion = nil
            defer {
                state.started = [:]
                state.hedges = []
            }
            return (outcome(state), completion, state.started, state.hedges)
        }
        guard let (result, completion, started, hedges) = ended else { return }
        for timer in hedges { timer.cancel() }
        let now = group.now
        for (index, running) in started {
            if losers { group.recordFailure(index, elapsed: now - running.time, .cancelled) }
            running.cancellation.cancel()
        }
        completion(result)
    }
}
