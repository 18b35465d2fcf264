import HTTPDNSCore
import Synchronization

/// One upstream lookup that any number of callers wait for (RFC 5452: one outstanding query per
/// name and type).
///
/// Waiting costs no task: each waiter parks a continuation here, and a cancelled waiter leaves at
/// once without disturbing the lookup or the other waiters.
final class HTTPDNSFlight: Sendable {
    typealias Outcome = Result<HTTPDNSAnswer, HTTPDNSError>

    typealias Waiter = UnsafeContinuation<HTTPDNSAnswer, any Error>

    private struct State {
        var outcome: Outcome?
        /// The first waiter, kept apart: most lookups have exactly one, and it then needs no table.
        var sole: (id: Int, waiter: Waiter)?
        var others: [Int: Waiter] = [:]
        var cancelled: Set<Int> = []
        var observers: [@Sendable (Outcome) -> Void] = []

        mutating func removeWaiter(_ id: Int) -> Waiter? {
            if let sole, sole.id == id {
                self.sole = nil
                return sole.waiter
            }
            return others.removeValue(forKey: id)
        }
    }

    private let state = HTTPDNSLock(State())
    /// Waiters' numbers, unique within this flight; taken without the lock.
    private let nextID = Atomic<Int>(0)
    private let host: String

    init(host: String) {
        self.host = host
    }

    /// Callers parked here right now (tests order events by it: "both callers wait on one lookup").
    var waiterCount: Int {
        state.withLock { ($0.sole == nil ? 0 : 1) + $0.others.count }
    }

    /// Delivers the outcome to every waiter and observer; later calls do nothing.
    func finish(_ outcome: Outcome) {
        let (sole, others, observers) = state.withLock { state -> (Waiter?, [Int: Waiter], [@Sendable (Outcome) -> Void]) in
            guard state.outcome == nil else { return (nil, [:], []) }
            state.outcome = outcome
            defer {
                state.sole = nil
                state.others = [:]
                state.observers = []
            }
            return (state.sole?.waiter, state.others, state.observers)
        }
        let result = outcome.mapError { $0 as any Error }
        sole?.resume(with: result)
        for waiter in others.values { waiter.resume(with: result) }
        for observer in observers { observer(outcome) }
    }

    /// Calls `observer` with the outcome (at once if it is known).
    func observe(_ observer: @escaping @Sendable (Outcome) -> Void) {
        let known = state.withLock { state -> Outcome? in
            if let outcome = state.outcome { return outcome }
            state.observers.append(observer)
            return nil
        }
        if let known { observer(known) }
    }

    /// Waits for the outcome; throws `.cancelled` as soon as the calling task is cancelled.
    ///
    /// - Parameter start: called once this waiter is parked (or knows its outcome), as the last thing
    ///   before the task suspends: the caller that registered the flight starts its lookup here, so
    ///   that the transport's thread it wakes finds this one about to sleep, as `HTTPTransport.send`
    ///   does (bench row 2: waking the loop while the caller still ran cost 8 times as much).
    func wait(then start: (() -> Void)? = nil) async throws -> HTTPDNSAnswer {
        let id = nextID.wrappingAdd(1, ordering: .relaxed).oldValue
        let host = self.host
        return try await withTaskCancellationHandler {
            // Each waiter is resumed exactly once: by `finish`, by the cancellation handler, or
            // here, whichever takes it out of the state under the lock.
            try await withUnsafeThrowingContinuation { (continuation: Waiter) in
                let immediate = state.withLock { state -> Result<HTTPDNSAnswer, any Error>? in
                    if let outcome = state.outcome { return outcome.mapError { $0 as any Error } }
                    if state.cancelled.remove(id) != nil {
                        return .failure(HTTPDNSError(.cancelled, "lookup cancelled", host: host))
                    }
                    if state.sole == nil {
                        state.sole = (id, continuation)
                    } else {
                        state.others[id] = continuation
                    }
                    return nil
                }
                if let immediate { continuation.resume(with: immediate) }
                start?()
            }
        } onCancel: {
            let waiter = state.withLock { state -> Waiter? in
                if let waiter = state.removeWaiter(id) { return waiter }
                if state.outcome == nil { state.cancelled.insert(id) }
                return nil
            }
            waiter?.resume(throwing: HTTPDNSError(.cancelled, "lookup cancelled", host: host))
        }
    }
}
