import HTTPDNSCore
import HTTPDNSFleet
import Synchronization

/// The service's report state: the aggregator and the decisions behind one lock, the probes they
/// start, and the bound on batches in hand. The logic is in the two values; this class only holds
/// them and does the I/O (the probes, on the cooperative pool).
package final class HTTPDNSReports: Sendable {
    struct State: Sendable {
        var aggregator: HTTPDNSReportAggregator
        var decisions: HTTPDNSReportDecisions
        var probesInFlight = 0
    }

    /// One probe to run, decided under the lock and started after it.
    struct ProbeJob: Sendable {
        var address: HTTPDNSIPAddress
        var host: String
        var port: Int
    }

    let settings: HTTPDNSService.Reports
    let authenticator: HTTPDNSReportAuthenticator
    let counters: HTTPDNSReportCounters
    let clock: any HTTPDNSClock
    private let state: HTTPDNSLock<State>
    private let batchesInFlight = Atomic<Int>(0)
    /// Decisions made so far (never lowered): while 0, answers need no look at the decisions, so the
    /// hot path takes no lock when apps have reported nothing that counted.
    private let decisionsMade = Atomic<Int>(0)
    /// Called after decisions are made (the service drops its kept wire answers then).
    private let onDecision: @Sendable () -> Void
    /// The fleet's Redis (``HTTPDNSService/Reports/redis``); nil: this instance alone.
    package let sharer: HTTPDNSReportSharer?

    package init(
        settings: HTTPDNSService.Reports, authenticator: HTTPDNSReportAuthenticator, counters: HTTPDNSReportCounters,
        clock: any HTTPDNSClock, onDecision: @escaping @Sendable () -> Void = {}
    ) {
        self.settings = settings
        self.onDecision = onDecision
        self.authenticator = authenticator
        self.counters = counters
        self.clock = clock
        var bounds = HTTPDNSReportAggregator.Bounds()
        bounds.maxKeys = settings.maxTrackedAddresses
        bounds.maxNetworksPerKey = settings.maxNetworksPerAddress
        state = HTTPDNSLock(State(
            aggregator: HTTPDNSReportAggregator(window: settings.window.inSeconds, bounds: bounds),
            decisions: HTTPDNSReportDecisions(hold: settings.holdTime.inSeconds, maxDecisions: settings.maxTrackedAddresses)))
        sharer = settings.redis.map { redis in
            HTTPDNSReportSharer(
                settings: redis.connection,
                sharing: HTTPDNSReportSharing(
                    namespace: redis.namespace, window: settings.window.inSeconds, hold: settings.holdTime.inSeconds,
                    maxNetworks: settings.maxNetworksPerAddress, maxPending: redis.maxPending),
                clock: clock)
        }
        if let sharer { counters.attach(sharer) }
    }

    /// Starts sharing through Redis, when configured; calling it again does nothing.
    package func startSharing() {
        sharer?.start(HTTPDNSReportSharer.Sink(
            merge: { [weak self] report, sightings in self?.merge(report, sightings: sightings) },
            adopt: { [weak self] decisions in self?.adopt(decisions) },
            inForce: { [weak self] in self?.decisions() ?? [] }))
    }

    /// Stops sharing (waits for the Redis thread). Safe to call twice.
    package func stopSharing() {
        sharer?.stop()
    }

    /// Takes one of ``HTTPDNSService/Reports/maxBatchesInFlight`` places; false when all are taken
    /// (the request is then answered 503). Every true must be followed by ``release()``.
    package func admit() -> Bool {
        let limit = settings.maxBatchesInFlight
        var current = batchesInFlight.load(ordering: .relaxed)
        while current < limit {
            let (exchanged, original) = batchesInFlight.compareExchange(
                expected: current, desired: current + 1, ordering: .acquiringAndReleasing)
            if exchanged { return true }
            current = original
        }
        return false
    }

    /// Gives back a place taken by ``admit()``.
    package func release() {
        batchesInFlight.subtract(1, ordering: .acquiringAndReleasing)
    }

    /// Records an authenticated batch from `client`, authenticated as `credential`
    /// (``HTTPDNSReportCredential/owner``, 0 unknown); items for which `served(host, address)` is
    /// false are ignored. Starts the probes that crossing the threshold calls for. Returns the
    /// number of items recorded.
    package func record(
        _ batch: HTTPDNSReportBatch, client: HTTPDNSIPAddress, credential: UInt64 = 0, served: (String, HTTPDNSIPAddress) -> Bool
    ) -> Int {
        let now = clock.now()
        let network = HTTPDNSReportNetwork(client: client)
        let view = settings.view?(client) ?? HTTPDNSService.Reports.defaultView
        let relevant = batch.items.filter { served($0.host, $0.address) }
        var jobs: [ProbeJob] = []
        var skipped = 0
        var decided: [HTTPDNSReportDecisions.Decision] = []
        state.withLock { state in
            for item in relevant {
                let key = HTTPDNSReportAggregator.Key(address: item.address, view: view)
                let networks = state.aggregator.record(key, network: network, credential: credential, host: item.host, port: item.port, now: now)
                consider(key, networks: networks, host: item.host, port: item.port, now: now, state: &state, jobs: &jobs, skipped: &skipped, decided: &decided)
            }
            publish(decided)
        }
        if let sharer, HTTPDNSReportSharing.isShareable(view: view) {
            for item in relevant {
                sharer.share(HTTPDNSReportSharing.Report(
                    key: .init(address: item.address, view: view), network: network, host: item.host, port: item.port, time: now))
            }
        }
        counters.update { counters in
            counters.recorded &+= UInt64(relevant.count)
            counters.ignored &+= UInt64(batch.items.count - relevant.count)
            counters.skipped &+= UInt64(skipped)
        }
        count(decided)
        refreshGauges()
        for job in jobs { start(job) }
        return relevant.count
    }

    /// `key`, now reported from `networks` networks: starts a probe (into `jobs`) when that calls for one.
    private func consider(
        _ key: HTTPDNSReportAggregator.Key, networks: Int, host: String, port: Int, now: Double, state: inout State, jobs: inout [ProbeJob],
        skipped: inout Int, decided: inout [HTTPDNSReportDecisions.Decision]
    ) {
        guard state.decisions.needsProbe(key, networks: networks, threshold: settings.threshold, now: now) else { return }
        guard settings.probe != nil else {
            // No probe (only when made without the service, which always gives one): the
            // clients' word alone may only reorder their own view.
            decided += state.decisions.probeFinished(
                key.address, reachable: true, views: [(key.view, networks)], host: host, port: port, now: now)
            return
        }
        guard state.probesInFlight < settings.maxProbesInFlight else {
            skipped += 1
            return
        }
        state.probesInFlight += 1
        state.decisions.probeStarted(key.address)
        jobs.append(ProbeJob(address: key.address, host: host, port: port))
    }

    /// The fleet's sightings of a pair this instance shared (on the Redis thread): counted as
    /// this instance's own, so that crossing the threshold fleet-wide starts the probe here.
    func merge(_ report: HTTPDNSReportSharing.Report, sightings: [HTTPDNSReportSharing.Sighting]) {
        let now = clock.now()
        var jobs: [ProbeJob] = []
        var skipped = 0
        var decided: [HTTPDNSReportDecisions.Decision] = []
        state.withLock { state in
            let networks = state.aggregator.merge(report.key, sightings: sightings, host: report.host, port: report.port, now: now)
            consider(report.key, networks: networks, host: report.host, port: report.port, now: now, state: &state, jobs: &jobs, skipped: &skipped, decided: &decided)
            publish(decided)
        }
        if skipped > 0 { counters.update { $0.skipped &+= UInt64(skipped) } }
        count(decided)
        refreshGauges()
        for job in jobs { start(job) }
    }

    /// Decisions in force in the fleet (on the Redis thread): held here as if made here, without
    /// counting them as made here.
    func adopt(_ decisions: [HTTPDNSReportDecisions.Decision]) {
        let now = clock.now()
        let adopted = state.withLock { state in
            let adopted = decisions.filter { state.decisions.adopt($0, now: now) }
            publish(adopted)
            return adopted
        }
        guard !adopted.isEmpty else { return }
        onDecision()
        refreshGauges()
    }

    private func start(_ job: ProbeJob) {
        guard let probe = settings.probe else { return }
        let timeout = settings.probeTimeout
        Task {
            let reachable = await Self.firstOf(timeout: timeout, fallback: false) {
                await probe.probe(address: job.address, port: job.port, host: job.host)
            }
            self.finish(job, reachable: reachable)
        }
    }

    /// A probe ended: decide.
    func finish(_ job: ProbeJob, reachable: Bool) {
        let now = clock.now()
        let decided = state.withLock { state in
            let views = state.aggregator.views(reporting: job.address, threshold: settings.threshold, now: now).map { view in
                (view: view, networks: state.aggregator.networks(.init(address: job.address, view: view), now: now))
            }
            let decided = state.decisions.probeFinished(job.address, reachable: reachable, views: views, host: job.host, port: job.port, now: now)
            publish(decided)
            return decided
        }
        counters.update { counters in
            if reachable { counters.reachable &+= 1 } else { counters.unreachable &+= 1 }
        }
        count(decided)
        refreshGauges()
        // Last, so that once no probe is in flight its outcome is visible everywhere.
        state.withLock { $0.probesInFlight -= 1 }
    }

    /// Opens the answers' look at the decisions for `decided`, under the lock that recorded them: an
    /// answer that can see a decision in force (``decisions()``) is ordered by it. (Bumped after the
    /// lock, an answer in between was served in the old order: seen in a fleet test that asked for
    /// the answer as soon as the decision showed.)
    private func publish(_ decided: [HTTPDNSReportDecisions.Decision]) {
        if !decided.isEmpty { decisionsMade.add(decided.count, ordering: .releasing) }
    }

    /// Reports decisions already recorded and published (``publish(_:)``): drops the kept wire
    /// answers, shares them with the fleet, counts them.
    private func count(_ decisions: [HTTPDNSReportDecisions.Decision]) {
        guard !decisions.isEmpty else { return }
        onDecision()
        sharer?.publish(decisions.filter { $0.view.map(HTTPDNSReportSharing.isShareable(view:)) ?? true })
        counters.update { counters in
            for decision in decisions {
                switch decision.kind {
                case .down: counters.down &+= 1
                case .demoted: counters.demoted &+= 1
                }
            }
        }
    }

    private func refreshGauges() {
        let now = clock.now()
        let figures = state.withLock { state in
            (state.aggregator.trackedKeys, state.aggregator.trackedNetworks, state.aggregator.evictedKeys, state.aggregator.evictedNetworks,
             state.decisions.evicted, state.decisions.counts(now: now))
        }
        counters.update { counters in
            counters.trackedAddresses = figures.0
            counters.trackedNetworks = figures.1
            counters.evictedAddresses = figures.2
            counters.evictedNetworks = figures.3
            counters.evictedDecisions = figures.4
            counters.downInForce = figures.5.down
            counters.demotedInForce = figures.5.demoted
        }
    }

    /// `addresses` as clients of `view` are to get them now (``HTTPDNSReportDecisions/order(_:view:now:)``).
    package func order(_ addresses: [HTTPDNSIPAddress], view: String) -> [HTTPDNSIPAddress] {
        guard decisionsMade.load(ordering: .acquiring) > 0 else { return addresses }
        let now = clock.now()
        return state.withLock { $0.decisions.order(addresses, view: view, now: now) }
    }

    /// Whether `address` is down for all now.
    package func isDown(_ address: HTTPDNSIPAddress) -> Bool {
        let now = clock.now()
        return state.withLock { $0.decisions.isDown(address, now: now) }
    }

    /// The decisions in force now.
    package func decisions() -> [HTTPDNSReportDecisions.Decision] {
        let now = clock.now()
        return state.withLock { $0.decisions.inForce(now: now) }
    }

    /// The aggregator, the decisions in force at `now` and the probes in flight, read together.
    func stateSnapshot(now: Double) -> (HTTPDNSReportAggregator, [HTTPDNSReportDecisions.Decision], Int) {
        state.withLock { ($0.aggregator, $0.decisions.inForce(now: now), $0.probesInFlight) }
    }

    /// A copy of the aggregator, for tests and the status page.
    package var aggregator: HTTPDNSReportAggregator { state.withLock { $0.aggregator } }

    /// Probes in flight now.
    package var probesInFlight: Int { state.withLock { $0.probesInFlight } }

    /// `body`'s result, or `fallback` once `timeout` has passed (the body is then left to finish
    /// on its own, and its result dropped).
    static func firstOf<T: Sendable>(timeout: Duration, fallback: T, _ body: @escaping @Sendable () async -> T) async -> T {
        let once = HTTPDNSLock<CheckedContinuation<T, Never>?>(nil)
        return await withCheckedContinuation { (continuation: CheckedContinuation<T, Never>) in
            once.withLock { $0 = continuation }
            @Sendable func deliver(_ value: T) {
                once.withLock { pending in
                    pending?.resume(returning: value)
                    pending = nil
                }
            }
            let work = Task { deliver(await body()) }
            let timer = Task {
                try? await Task.sleep(for: timeout)
                guard !Task.isCancelled else { return }
                // The fallback first: a probe cancelled here may return at once, and must not win.
                deliver(fallback)
                work.cancel()
            }
            // A probe that answers in time stops the timer instead of leaving it asleep.
            Task {
                await work.value
                timer.cancel()
            }
        }
    }
}
