/// When each target is probed next, as a value: time and randomness come in as arguments.
///
/// A target is probed at most once at a time: ``takeDue(now:limit:)`` hands it out and it is not due
/// again until ``completed(_:now:random:)`` reschedules it one interval (± jitter) after its probe
/// ended, so a slow origin is never probed by two overlapping probes. New targets (at start and on a
/// reload) are due within their first `jitter × interval`, spread at random.
package struct HTTPDNSHealthScheduler: Sendable {
    /// Random numbers in a range (`Double.random(in:)` in service; tests pass fixed values).
    package typealias Random = (ClosedRange<Double>) -> Double

    private var due: [HTTPDNSHealthTarget: ContinuousClock.Instant] = [:]
    private var probing: Set<HTTPDNSHealthTarget> = []

    package init() {}

    /// Makes `targets` the set scheduled: those already known keep their times, new ones are due
    /// soon, the others are forgotten (a probe of theirs in flight is ignored when it ends).
    package mutating func update(targets: some Sequence<HTTPDNSHealthTarget>, now: ContinuousClock.Instant, random: Random) {
        let wanted = Set(targets)
        due = due.filter { wanted.contains($0.key) }
        probing.formIntersection(wanted)
        for target in wanted where due[target] == nil && !probing.contains(target) {
            due[target] = now + target.check.interval * random(0...target.check.jitter)
        }
    }

    /// Up to `limit` targets due at `now`, earliest first; they are probing until ``completed(_:now:random:)``.
    package mutating func takeDue(now: ContinuousClock.Instant, limit: Int) -> [HTTPDNSHealthTarget] {
        guard limit > 0 else { return [] }
        // A pass over the times, not a filtered copy of the table: this runs after every probe.
        var found: [(target: HTTPDNSHealthTarget, at: ContinuousClock.Instant)] = []
        for (target, at) in due where at <= now { found.append((target, at)) }
        var ready = found.sorted { $0.at < $1.at }.map(\.target)
        if ready.count > limit { ready.removeLast(ready.count - limit) }
        for target in ready {
            due[target] = nil
            probing.insert(target)
        }
        return ready
    }

    /// A probe of `target` ended at `now`: the next is due one interval later, ± jitter. Returns
    /// false when `target` is no longer scheduled (dropped by a reload while probing).
    @discardableResult
    package mutating func completed(_ target: HTTPDNSHealthTarget, now: ContinuousClock.Instant, random: Random) -> Bool {
        guard probing.remove(target) != nil else { return false }
        let jitter = target.check.jitter
        due[target] = now + target.check.interval * (1 + random(-jitter...jitter))
        return true
    }

    /// The earliest time a target not probing now is due, nil when none is.
    package var nextDue: ContinuousClock.Instant? { due.values.min() }

    /// When `target` is due next (nil while probing or unknown); for tests.
    package func dueTime(_ target: HTTPDNSHealthTarget) -> ContinuousClock.Instant? { due[target] }

    /// Targets being probed now.
    package var probingCount: Int { probing.count }
}
