import HTTPDNSCore

/// One upstream lookup that any number of callers wait for (RFC 5452: one outstanding query per
/// name and type).
///
/// Waiting costs no task: each waiter parks a continuation here, and a cancelled waiter leaves at
/// once without disturbing the lookup or the other waiters.
final class HTTPDNSFlight: Sendable {
    typealias Outcome = Result<HTTPDNSAnswer, HTTPDNSError>

    private struct State {
        var outcome: Outcome?
        var waiters: [Int: CheckedContinuation<HTTPDNSAnswer, any Error>] = [:]
        var cancelled: Set<Int> = []
        var nextID = 0
        var observers: [@Sendable (Outcome) -> Void] = []
    }

    private let state = HTTPDNSLock(State())
    private let host: String

    init(host: String) {
        self.host = host
    }

    /// Callers parked here right now (tests order events by it: "both callers wait on one lookup").
    var waiterCount: Int {
        state.withLock { $0.waiters.count }
    }

    /// Delivers the outcome to every waiter and observer; later calls do nothing.
    func finish(_ outcome: Outcome) {
        let (waiters, observers) = state.withLock { state -> ([CheckedContinuation<HTTPDNSAnswer, any Error>], [@Sendable (Outcome) -> Void]) in
            guard state.outcome == nil else { return ([], []) }
            state.outcome = outcome
            defer {
                state.waiters = [:]
                state.observers = []
            }
            return (Array(state.waiters.values), state.observers)
        }
        for waiter in waiters { waiter.resume(with: outcome.mapError { $0 as any Error }) }
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
        let id = state.withLock { state -> Int in
            defer { state.nextID += 1 }
            return state.nextID
        }
        let host = self.host
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<HTTPDNSAnswer, any Error>) in
                let immediate = state.withLock { state -> Result<HTTPDNSAnswer, any Error>? in
                    if let outcome = state.outcome { return outcome.mapError { $0 as any Error } }
                    if state.cancelled.remove(id) != nil {
                        return .failure(HTTPDNSError(.cancelled, "lookup cancelled", host: host))
                    }
                    state.waiters[id] = continuation
                    return nil
                }
                if let immediate { continuation.resume(with: immediate) }
                start?()
            }
        } onCancel: {
            let waiter = state.withLock { state -> CheckedContinuation<HTTPDNSAnswer, any Error>? in
                if let waiter = state.waiters.removeValue(forKey: id) { return waiter }
                if state.outcome == nil { state.cancelled.insert(id) }
                return nil
            }
            waiter?.resume(throwing: HTTPDNSError(.cancelled, "lookup cancelled", host: host))
        }
    }
}
