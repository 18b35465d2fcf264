import Dispatch
import Foundation
import HTTPDNSCore

/// Runs one blocking job on a ``BlockingPool`` and hands its result to an async caller.
///
/// Blocking calls (`poll`, `recv`, `getaddrinfo`) must never run on Swift's cooperative pool: a few
/// slow lookups would starve every other task (house style §7). The caller's continuation is resumed
/// exactly once, by whichever comes first: the job's result, the timeout, or task cancellation (the
/// rules are ``BlockingCallState``'s). The timeout counts from the call, not from when a worker
/// takes the job, and a job whose caller has left before a worker took it never runs. A job that is
/// still running when the caller has moved on finishes in the background; jobs that can stop early
/// poll ``isFinished``.
final class BlockingCall<Value: Sendable>: Sendable {
    typealias Outcome = Result<Value, HTTPDNSError>

    /// What the timeout of a call limits.
    enum Limit: Sendable {
        /// The whole call, queued or running: for jobs that cannot be interrupted (`getaddrinfo`).
        case call(Duration)
        /// Only the wait in the pool's queue. A started job enforces the same deadline itself (it was
        /// computed from the same moment) and knows better what to report when it passes: an
        /// exchange that has seen a malformed answer reports that rather than a bare timeout.
        case queue(Duration)
    }

    private typealias State = BlockingCallState<CheckedContinuation<Value, any Error>, Outcome>

    private let state = HTTPDNSLock(State())
    private let pool: BlockingPool

    private init(pool: BlockingPool) {
        self.pool = pool
    }

    /// True once a result, timeout or cancellation has been delivered; the job may stop.
    var isFinished: Bool { state.withLock { $0.isFinished } }

    /// Runs `job` on `pool` and waits for it without blocking the caller's thread.
    ///
    /// - Parameters:
    ///   - pool: where the job runs; it waits in the pool's queue while every worker is busy.
    ///   - limit: when to deliver `HTTPDNSError.timedOut`, counted from this call.
    ///   - job: the blocking work; it may check `call.isFinished` to give up early.
    /// - Throws: the job's `HTTPDNSError`, `.timedOut`, `.cancelled` when the task is cancelled, or
    ///   `.transport` when the pool's queue is full.
    static func run(
        on pool: BlockingPool, limit: Limit, timeoutDetail: String = "no answer in time",
        _ job: @escaping @Sendable (BlockingCall<Value>) -> Outcome
    ) async throws -> Value {
        let call = BlockingCall<Value>(pool: pool)
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                call.wait(continuation)
                if Task.isCancelled {
                    call.finish(.failure(HTTPDNSError(.cancelled, "cancelled before start")))
                    return
                }
                call.startTimer(limit, detail: timeoutDetail)
                guard let ticket = pool.submit({ call.start(job) }) else {
                    call.finish(.failure(HTTPDNSError(.transport, "\(pool.queueLimit) blocking calls already waiting for \(pool.name)")))
                    return
                }
                call.queued(ticket: ticket)
            }
        } onCancel: {
            call.finish(.failure(HTTPDNSError(.cancelled, "task cancelled")))
        }
    }

    private func wait(_ continuation: CheckedContinuation<Value, any Error>) {
        if let delivery = state.withLock({ $0.wait(continuation) }) { deliver(delivery) }
    }

    /// On a worker: runs `job` unless the caller has already had an outcome.
    private func start(_ job: (BlockingCall<Value>) -> Outcome) {
        guard state.withLock({ $0.start() }) else { return }
        finish(job(self))
    }

    private func queued(ticket: UInt64) {
        if state.withLock({ $0.queued(ticket: ticket) }) { pool.withdraw(ticket) }
    }

    private func finish(_ outcome: Outcome) {
        perform(state.withLock { $0.finish(outcome) })
    }

    private func startTimer(_ limit: Limit, detail: String) {
        let timeout: Duration
        switch limit {
        case .call(let duration), .queue(let duration): timeout = duration
        }
        let outcome = Outcome.failure(HTTPDNSError(.timedOut, detail))
        DispatchQueue.global().asyncAfter(deadline: .now() + .nanoseconds(timeout.nanosecondsClamped)) { [self] in
            switch limit {
            case .call: perform(state.withLock { $0.finish(outcome) })
            case .queue: perform(state.withLock { $0.expire(outcome) })
            }
        }
    }

    private func perform(_ actions: State.Actions) {
        if let ticket = actions.withdraw { pool.withdraw(ticket) }
        if let delivery = actions.delivery { deliver(delivery) }
    }

    private func deliver(_ delivery: State.Delivery) {
        delivery.waiter.resume(with: delivery.outcome.mapError { $0 as any Error })
    }
}

extension Duration {
    /// Whole nanoseconds, clamped to `Int`; negative durations give 0.
    var nanosecondsClamped: Int {
        let (seconds, attoseconds) = components
        if seconds < 0 { return 0 }
        if seconds >= Int64(Int.max / 1_000_000_000) { return Int.max }
        return Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000)
    }

    /// Whole milliseconds for `poll`, rounded up, clamped to 0...Int32.max.
    var pollMilliseconds: Int32 {
        let nanoseconds = nanosecondsClamped
        return Int32(clamping: (nanoseconds + 999_999) / 1_000_000)
    }
}
