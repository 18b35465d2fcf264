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
    private let clock = ContinuousClock()
    private let start = ContinuousClock.now

    package init(_ upstreams: [any DNSStubUpstream], configuration: DNSStubUpstreamRanking.Configuration = .init(), metrics: DNSStubMetrics? = nil) {
        self.upstreams = upstreams
        self.metrics = metrics
        ranking = HTTPDNSLock(DNSStubUpstreamRanking(count: upstreams.count, configuration: configuration))
    }

    /// The ranking as it stands; replaced as a whole when the network changes (``DNSStubNetworkChange``).
    package var currentRanking: DNSStubUpstreamRanking {
        get { ranking.withLock { $0 } }
        set { ranking.withLock { $0 = newValue } }
    }

    /// Seconds on a monotonic clock.
    private var now: Double {
        let elapsed = clock.now - start
        return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    }

    private enum Event: Sendable {
        case finished(Int, Result<DNSMessage, any Error>)
        case hedge(Int)
    }

    /// Asks the upstreams, hedged, within `timeout` per exchange.
    package func exchange(_ query: DNSMessage, timeout: Duration) async -> Outcome {
        let order = ranking.withLock { $0.order(now: now) }
        return await withTaskGroup(of: Event.self) { group -> Outcome in
            var next = 0
            var started: [Int: Double] = [:]
            var failures: [String] = []
            var allTimedOut = true
            var lastBad: (DNSStubResponse, String)?
            func launch() {
                guard next < order.count else { return }
                let index = order[next]
                next += 1
                started[index] = now
                let upstream = upstreams[index]
                group.addTask {
                    do {
                        return .finished(index, .success(try await upstream.exchange(query, timeout: timeout)))
                    } catch {
                        return .finished(index, .failure(error))
                    }
                }
                if next < order.count {
                    let delay = ranking.withLock { $0.hedgeDelay(index) }
                    group.addTask {
                        try? await Task.sleep(for: .microseconds(Int64(delay * 1e6)))
                        return .hedge(index)
                    }
                }
            }
            launch()
            while let event = await group.next() {
                switch event {
                case .hedge(let index):
                    // Still waiting on it: ask the next one too.
                    if started[index] != nil, next < order.count {
                        metrics?.hedged(upstreams[index].name)
                        launch()
                    }
                case .finished(let index, let result):
                    guard let begun = started.removeValue(forKey: index) else { continue }
                    let name = upstreams[index].name
                    let elapsed = now - begun
                    switch result {
                    case .success(let message):
                        let response = DNSStubResponse(upstream: message)
                        if response.rcode == .serverFailure || response.rcode == .refused {
                            ranking.withLock { $0.recordFailure(index, now: now) }
                            metrics?.upstream(name, .servfail)
                            failures.append("\(name): \(response.rcode)")
                            allTimedOut = false
                            lastBad = (response, name)
                        } else {
                            let srtt = ranking.withLock { ranking -> Double in
                                ranking.recordSuccess(index, rtt: elapsed, now: now)
                                return ranking.entries[index].smoothedRTT ?? elapsed
                            }
                            metrics?.upstream(name, .answered, smoothedRTT: srtt)
                            // The others lost the race: slower than this one, counted so.
                            for (other, otherBegun) in started {
                                ranking.withLock { $0.recordFailure(other, elapsed: now - otherBegun, now: now) }
                                metrics?.upstream(upstreams[other].name, .cancelled)
                            }
                            group.cancelAll()
                            return .answer(response, upstream: name)
                        }
                    case .failure(let error):
                        ranking.withLock { $0.recordFailure(index, elapsed: elapsed, now: now) }
                        let code = (error as? HTTPDNSError)?.code
                        if code != .timedOut { allTimedOut = false }
                        metrics?.upstream(name, code == .timedOut ? .timeout : .error)
                        failures.append("\(name): \(code.map { "\($0)" } ?? "\(error)")")
                    }
                    launch()
                    if started.isEmpty, next >= order.count {
                        group.cancelAll()
                        if let (response, name) = lastBad { return .answer(response, upstream: name) }
                        return .failed(failures, allTimedOut: allTimedOut)
                    }
                }
            }
            if let (response, name) = lastBad { return .answer(response, upstream: name) }
            return .failed(failures, allTimedOut: allTimedOut)
        }
    }
}
