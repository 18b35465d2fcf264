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
    /// The due times in a binary min-heap, so that finding what is due costs log n rather than a
    /// pass over every target after each probe (1,000 targets every 5 s are 200 probes a second).
    /// An entry whose time is no longer the target's in `due` is stale and skipped when it surfaces.
    private var heap: [(at: ContinuousClock.Instant, target: HTTPDNSHealthTarget)] = []

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
        heap = due.map { (at: $0.value, target: $0.key) }
        for index in stride(from: heap.count / 2 - 1, through: 0, by: -1) { siftDown(index) }
    }

    /// Up to `limit` targets due at `now`, earliest first; they are probing until ``completed(_:now:random:)``.
    /// A target due within `early` of `now` (at most a tenth of its interval) counts as due.
    package mutating func takeDue(now: ContinuousClock.Instant, limit: Int, early: Duration = .zero) -> [HTTPDNSHealthTarget] {
        var ready: [HTTPDNSHealthTarget] = []
        while ready.count < limit, let top = heap.first {
            guard due[top.target] == top.at else {
                pop()
                continue
            }
            guard top.at <= now + min(early, top.target.check.interval / 10) else { break }
            pop()
            due[top.target] = nil
            probing.insert(top.target)
            ready.append(top.target)
        }
        return ready
    }

    /// A probe of `target` ended at `now`: the next is due one interval later, ± jitter. Returns
    /// false when `target` is no longer scheduled (dropped by a reload while probing).
    @discardableResult
    package mutating func completed(_ target: HTTPDNSHealthTarget, now: ContinuousClock.Instant, random: Random) -> Bool {
        guard probing.remove(target) != nil else { return false }
        let jitter = target.check.jitter
        let at = now + target.check.interval * (1 + random(-jitter...jitter))
        due[target] = at
        push((at, target))
        return true
    }

    /// The earliest time a target not probing now is due, nil when none is.
    package var nextDue: ContinuousClock.Instant? {
        mutating get {
            while let top = heap.first, due[top.target] != top.at { pop() }
            return heap.first?.at
        }
    }

    private mutating func push(_ entry: (at: ContinuousClock.Instant, target: HTTPDNSHealthTarget)) {
        heap.append(entry)
        var child = heap.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard heap[child].at < heap[parent].at else { break }
            heap.swapAt(child, parent)
            child = parent
        }
    }

    private mutating func pop() {
        guard !heap.isEmpty else { return }
        heap.swapAt(0, heap.count - 1)
        heap.removeLast()
        siftDown(0)
    }

    private mutating func siftDown(_ start: Int) {
        var parent = start
        while true {
            let left = 2 * parent + 1
            guard left < heap.count else { return }
            var smallest = left
            if left + 1 < heap.count, heap[left + 1].at < heap[left].at { smallest = left + 1 }
            guard heap[smallest].at < heap[parent].at else { return }
            heap.swapAt(smallest, parent)
            parent = smallest
        }
    }

    /// When `target` is due next (nil while probing or unknown); for tests.
    package func dueTime(_ target: HTTPDNSHealthTarget) -> ContinuousClock.Instant? { due[target] }

    /// Targets being probed now.
    package var probingCount: Int { probing.count }
}
