import HTTPDNSCore

/// Runs the health checks of a zone: the thin class around ``HTTPDNSHealthTable`` (up or down) and
/// ``HTTPDNSHealthScheduler`` (when), both behind one lock, with the probes themselves done by an
/// ``HTTPDNSHealthProbing``.
///
/// No task waits on a timer per target: one timer task sleeps until the earliest due probe, and
/// every probe's end starts what is due next. At most ``maxInFlight`` probes run at once, scheduled
/// and on-demand together; a due target waits in the schedule (not in a queue) while the bound is
/// reached, and on-demand probes wait in a queue of at most ``maxWaiting``.
package final class HTTPDNSHealthMonitor: Sendable {
    private struct State {
        var table = HTTPDNSHealthTable()
        var scheduler = HTTPDNSHealthScheduler()
        var running = false
        /// Raised by every stop, so that probes of an earlier run record nothing.
        var run = 0
        var timer: Task<Void, Never>?
        var timerAt: ContinuousClock.Instant?
        var probes: [Int: Task<Void, Never>] = [:]
        var nextID = 0
        var inFlight = 0
        var peakInFlight = 0
        /// On-demand probes waiting for a slot, in arrival order.
        var waiters: [(id: Int, continuation: CheckedContinuation<Bool, Never>)] = []
    }

    /// Most probes at once.
    package let maxInFlight: Int
    /// Most on-demand probes waiting for a slot; more fail at once (`busy`).
    package let maxWaiting: Int
    private let state = HTTPDNSLock(State())
    private let prober: any HTTPDNSHealthProbing
    private let metrics: HTTPDNSServerMetrics
    private let random: @Sendable (ClosedRange<Double>) -> Double
    private let onChange: @Sendable (HTTPDNSHealthSnapshot) -> Void

    /// - Parameters:
    ///   - maxInFlight: most probes at once (at least 1).
    ///   - prober: runs the probes.
    ///   - metrics: where probes, states and fail-opens are counted.
    ///   - random: random numbers for jitter. Default `Double.random(in:)`.
    ///   - onChange: called with the new snapshot whenever the down set changes (any thread, not
    ///     under the monitor's lock; snapshots may arrive out of order: compare generations).
    package init(
        maxInFlight: Int, prober: any HTTPDNSHealthProbing, metrics: HTTPDNSServerMetrics,
        random: @escaping @Sendable (ClosedRange<Double>) -> Double = { Double.random(in: $0) },
        onChange: @escaping @Sendable (HTTPDNSHealthSnapshot) -> Void
    ) {
        self.maxInFlight = max(1, maxInFlight)
        self.maxWaiting = self.maxInFlight * 4
        self.prober = prober
        self.metrics = metrics
        self.random = random
        self.onChange = onChange
    }

    deinit {
        stop()
    }

    /// Starts probing `targets` (replacing any set given before). Calling it while running only updates the targets.
    package func start(targets: HTTPDNSHealthTargets) {
        state.withLock { $0.running = true }
        update(targets: targets)
    }

    /// Stops every timer and probe; states are kept for a later start (which probes every target
    /// soon again). Safe to call more than once.
    package func stop() {
        let (timer, probes) = state.withLock { state in
            state.running = false
            state.run += 1
            // Probes cut short never complete in the scheduler: start afresh.
            state.scheduler = HTTPDNSHealthScheduler()
            defer {
                state.timer = nil
                state.timerAt = nil
                state.probes = [:]
            }
            return (state.timer, Array(state.probes.values))
        }
        timer?.cancel()
        for probe in probes { probe.cancel() }
    }

    /// Makes `targets` the set probed (a zone reload): those that remain keep their state and
    /// schedule, new ones start up and are probed soon, the others are dropped.
    package func update(targets: HTTPDNSHealthTargets) {
        let now = ContinuousClock.now
        let snapshot = state.withLock { state -> HTTPDNSHealthSnapshot? in
            let changed = state.table.update(targets: targets, now: now)
            state.scheduler.update(targets: targets.names.keys, now: now, random: random)
            return changed ? state.table.snapshot : nil
        }
        publishStates()
        if let snapshot { onChange(snapshot) }
        dispatch()
    }

    /// The states now (for the status endpoint and tests).
    package var table: HTTPDNSHealthTable { state.withLock { $0.table } }

    /// The most probes that ran at once since the monitor was made (for tests of the bound).
    package var peakInFlight: Int { state.withLock { $0.peakInFlight } }

    /// Starts the probes that are due, as far as the bound allows, and sets the timer for the next.
    ///
    /// A probe whose result is known at once (``HTTPDNSHealthProbeStart/finished(_:)``: most `tcp`
    /// connects on a LAN or loopback) is recorded here in a batch, with no task; only probes still
    /// running get a task each. 1,000 checked addresses every 5 s are 200 probes a second, and a
    /// task, a continuation and two lock rounds per probe were most of the monitor's cost. Targets
    /// due within ``early`` are taken with those due now, so the timer wakes at most once per
    /// ``early`` rather than once per probe.
    private func dispatch() {
        while true {
            let now = ContinuousClock.now
            let started = state.withLock { state -> [(target: HTTPDNSHealthTarget, probe: HTTPDNSHealthProbe, run: Int)] in
                guard state.running else { return [] }
                let due = state.scheduler.takeDue(now: now, limit: maxInFlight - state.inFlight, early: Self.early)
                state.inFlight += due.count
                state.peakInFlight = max(state.peakInFlight, state.inFlight)
                if due.isEmpty { armTimer(&state, now: now) }
                return due.map { target in
                    (target, HTTPDNSHealthProbe(address: target.address, check: target.check, name: state.table.targets.probeName(target)), state.run)
                }
            }
            guard !started.isEmpty else { return }
            var finished: [Completion] = []
            var running: [(target: HTTPDNSHealthTarget, rest: @Sendable () async -> HTTPDNSHealthProbeResult, run: Int)] = []
            for (target, probe, run) in started {
                switch prober.begin(probe) {
                case .finished(let result): finished.append(Completion(target: target, result: result, run: run, id: nil))
                case .running(let rest): running.append((target, rest, run))
                }
            }
            if !running.isEmpty {
                state.withLock { state in
                    for (target, rest, run) in running {
                        let id = state.nextID
                        state.nextID += 1
                        state.probes[id] = Task {
                            let result = await rest()
                            self.complete([Completion(target: target, result: result, run: run, id: id)])
                            self.dispatch()
                        }
                    }
                }
            }
            // Slots freed here are taken by the next pass of the loop.
            if !finished.isEmpty { complete(finished) }
        }
    }

    /// How much earlier than due a target may be probed, so that targets due close together are
    /// probed in one pass (capped at a tenth of the target's interval).
    static let early: Duration = .milliseconds(25)

    /// One probe's end, for ``complete(_:)``.
    private struct Completion {
        var target: HTTPDNSHealthTarget
        var result: HTTPDNSHealthProbeResult
        /// The run it was started in (a stop in between makes it no result).
        var run: Int
        /// Its task's key in `probes`; nil for a probe that finished within ``dispatch()``.
        var id: Int?
    }

    /// Probes ended: frees their slots, records their results, reschedules their targets, and
    /// hands any change of state to the metrics and ``onChange``.
    private func complete(_ completions: [Completion]) {
        let now = ContinuousClock.now
        let (counted, changes, snapshot, waiters) = state.withLock { state in
            var counted: [Bool] = []
            var changes: [(HTTPDNSHealthTarget, Bool)] = []
            var waiters: [CheckedContinuation<Bool, Never>] = []
            for completion in completions {
                if let id = completion.id { state.probes[id] = nil }
                if let waiter = releaseSlot(&state) { waiters.append(waiter) }
                // A probe cut short by a stop or a reload is no result.
                guard completion.run == state.run, state.scheduler.completed(completion.target, now: now, random: random) else { continue }
                let result = completion.result
                counted.append(result.passed)
                let recorded = HTTPDNSHealthStatus.Result(passed: result.passed, error: result.error, status: result.status, at: now)
                if state.table.record(completion.target, recorded) {
                    changes.append((completion.target, !state.table.down.contains(completion.target)))
                }
            }
            return (counted, changes, changes.isEmpty ? nil : state.table.snapshot, waiters)
        }
        for passed in counted { metrics.healthProbed(passed: passed, onDemand: false) }
        for waiter in waiters { waiter.resume(returning: true) }
        guard let snapshot else { return }
        for (target, up) in changes { metrics.healthState(target, up: up) }
        onChange(snapshot)
    }

    /// Sets the timer for the next due target, unless it is set earlier already or nothing could
    /// start then (every slot busy: the next probe to end dispatches).
    private func armTimer(_ state: inout State, now: ContinuousClock.Instant) {
        guard let next = state.scheduler.nextDue, next > now || state.inFlight < maxInFlight else { return }
        if let armed = state.timerAt, armed <= next { return }
        state.timer?.cancel()
        state.timerAt = next
        state.timer = Task { [weak self] in
            try? await Task.sleep(until: next, clock: .continuous)
            guard !Task.isCancelled, let self else { return }
            self.state.withLock { state in
                if state.timerAt == next {
                    state.timerAt = nil
                    state.timer = nil
                }
            }
            self.dispatch()
        }
    }

    /// Gives a freed slot to the first waiting on-demand probe, or frees it.
    private func releaseSlot(_ state: inout State) -> CheckedContinuation<Bool, Never>? {
        guard !state.waiters.isEmpty else {
            state.inFlight -= 1
            return nil
        }
        return state.waiters.removeFirst().continuation
    }

    /// Hands every state to the metrics (`httpdns_origin_up`) after a start or a reload; a probe's
    /// change of state updates its own entry only.
    package func publishStates() {
        let table = self.table
        metrics.healthStates(table.statuses.mapValues(\.isUp))
    }

    // MARK: On demand

    /// Runs a check of `address` now, within the bound on probes in flight, and returns what it
    /// found; the states are not changed (the caller decides what a result means).
    ///
    /// The check is the zone's for that address and port (preferring one whose names include
    /// `host`), with SNI and `Host` = `host` when `host` uses it, else its usual name; when the zone
    /// checks no such address and port, a `tcp` connect with the default timeout (2 s).
    ///
    /// - Returns: a failed result without probing for a port outside 1...65535 or a `host` that is not
    ///   a host name, when ``maxWaiting`` probes wait already (`busy`), or when the task is cancelled.
    package func probe(address: HTTPDNSIPAddress, port: Int, host: String) async -> HTTPDNSHealthProbeResult {
        let name = HTTPDNSHostPolicy.normalize(host)
        guard (1...65_535).contains(port), name.utf8.count <= 253, HTTPDNSHostPolicy.isValidHostName(name),
            !HTTPDNSIPAddress.isLiteral(name)
        else {
            return HTTPDNSHealthProbeResult(passed: false, error: "invalid address, port or host")
        }
        let probe = state.withLock { state in Self.onDemandProbe(address: address, port: port, name: name, state.table.targets) }
        guard await acquireSlot() else { return HTTPDNSHealthProbeResult(passed: false, error: "busy") }
        let result = await prober.probe(probe)
        let waiter = state.withLock { releaseSlot(&$0) }
        waiter?.resume(returning: true)
        metrics.healthProbed(passed: result.passed, onDemand: true)
        dispatch()
        return result
    }

    package static func onDemandProbe(address: HTTPDNSIPAddress, port: Int, name: String, _ targets: HTTPDNSHealthTargets) -> HTTPDNSHealthProbe {
        let candidates = targets.names.filter { $0.key.address == address && $0.key.check.port == port }
            .sorted { ($0.value.contains(name) ? 0 : 1, $0.key) < ($1.value.contains(name) ? 0 : 1, $1.key) }
        guard let (target, names) = candidates.first else {
            return HTTPDNSHealthProbe(address: address, check: HTTPDNSHealthCheck(.tcp, port: port), name: nil)
        }
        let sent = target.check.kind.needsName ? (names.contains(name) ? name : targets.probeName(target)) : nil
        return HTTPDNSHealthProbe(address: address, check: target.check, name: sent)
    }

    /// Waits for a slot; false when too many wait already or the task is cancelled.
    private func acquireSlot() async -> Bool {
        let id = state.withLock { state in
            defer { state.nextID += 1 }
            return state.nextID
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
                let answer = state.withLock { state -> Bool? in
                    if Task.isCancelled { return false }
                    if state.inFlight < maxInFlight {
                        state.inFlight += 1
                        state.peakInFlight = max(state.peakInFlight, state.inFlight)
                        return true
                    }
                    guard state.waiters.count < maxWaiting else { return false }
                    state.waiters.append((id, continuation))
                    return nil
                }
                if let answer { continuation.resume(returning: answer) }
            }
        } onCancel: {
            let waiter = state.withLock { state -> CheckedContinuation<Bool, Never>? in
                guard let index = state.waiters.firstIndex(where: { $0.id == id }) else { return nil }
                return state.waiters.remove(at: index).continuation
            }
            waiter?.resume(returning: false)
        }
    }
}
