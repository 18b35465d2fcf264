/// The failure reports waiting to be sent and when the next request may go: a plain value, tested
/// with an explicit `now` (seconds on a monotonic clock); ``FailureReporter`` holds it behind its lock.
///
/// Bounded: when full, a new report pushes out the oldest, which is counted. A batch whose send
/// failed goes back to the front (it is older than anything queued since), trimmed to the same bound.
package struct FailureReportQueue: Sendable {
    /// What the sender does next.
    package enum Step: Sendable, Equatable {
        /// Nothing waits: sleep until a report comes.
        case idle
        /// Reports wait, but the next request may not go for this many seconds.
        case wait(Double)
        /// Send this batch now, then call ``finished(_:_:now:)``.
        case send([FailureReport])
    }

    /// How a send ended.
    package enum Outcome: Sendable, Equatable {
        /// The endpoint took the batch (2xx).
        case accepted
        /// The endpoint refused the batch for good (a 4xx other than 429, or a request that cannot
        /// be made): sending it again would not help, so it is dropped and counted.
        case rejected
        /// Not taken now (no connection, 5xx, 429): the batch waits for a later request, no
        /// earlier than `after` seconds (the `Retry-After`) when given.
        case retry(after: Double?)
    }

    package let capacity: Int
    package let maxBatch: Int
    package let interval: Double
    /// How long the first report of a quiet spell waits for others (the rest of a request's
    /// addresses usually fail within it): one second, or the interval when that is shorter.
    package let gather: Double

    private var items: [FailureReport] = []
    /// When the oldest waiting report was queued, for the gathering wait.
    private var firstQueuedAt: Double?
    /// The next request not before this (an interval after the last, or a `Retry-After`).
    private var notBefore = -Double.infinity
    /// Reports dropped so far (pushed out of the full queue, or rejected by the endpoint).
    package private(set) var dropped = 0
    /// Reports the endpoint accepted so far.
    package private(set) var accepted = 0
    /// Report requests made so far.
    package private(set) var requests = 0
    /// Batches handed out by ``next(now:skippingGather:)`` whose send has not finished.
    package private(set) var inFlight = 0

    /// - Parameters: the settings, already within their bounds.
    package init(capacity: Int, maxBatch: Int, interval: Double) {
        self.capacity = max(1, capacity)
        self.maxBatch = max(1, maxBatch)
        self.interval = max(0, interval)
        self.gather = min(1, self.interval)
    }

    /// Reports waiting.
    package var count: Int { items.count }

    /// Queues `report`; returns how many older reports it pushed out (0 or 1).
    package mutating func append(_ report: FailureReport, now: Double) -> Int {
        if items.isEmpty { firstQueuedAt = now }
        items.append(report)
        return trim()
    }

    /// What to do at `now`; a returned batch leaves the queue. `skippingGather` sends without the
    /// gathering wait (a process about to exit), never sooner than the interval allows.
    package mutating func next(now: Double, skippingGather: Bool = false) -> Step {
        guard !items.isEmpty else { return .idle }
        let due = skippingGather ? notBefore : max(notBefore, (firstQueuedAt ?? now) + gather)
        guard now >= due else { return .wait(due - now) }
        let batch = Array(items.prefix(maxBatch))
        items.removeFirst(batch.count)
        // What is left has waited long enough already: it goes as soon as the interval allows.
        firstQueuedAt = items.isEmpty ? nil : -Double.infinity
        notBefore = now + interval
        requests += 1
        inFlight += 1
        return .send(batch)
    }

    /// Books how the send of `batch` ended at `now`; returns how many reports were dropped by it.
    package mutating func finished(_ batch: [FailureReport], _ outcome: Outcome, now: Double) -> Int {
        inFlight = max(0, inFlight - 1)
        switch outcome {
        case .accepted:
            accepted += batch.count
            return 0
        case .rejected:
            dropped += batch.count
            return batch.count
        case .retry(let after):
            if let after { notBefore = max(notBefore, now + after) }
            // The batch has waited its gathering time already.
            firstQueuedAt = -Double.infinity
            items.insert(contentsOf: batch, at: 0)
            return trim()
        }
    }

    /// Drops the oldest reports beyond the capacity; returns how many.
    private mutating func trim() -> Int {
        let excess = items.count - capacity
        guard excess > 0 else { return 0 }
        items.removeFirst(excess)
        dropped += excess
        return excess
    }
}
