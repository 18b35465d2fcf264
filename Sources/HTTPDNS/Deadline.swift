import Dispatch
import HTTPDNSCore

/// A resolver that enforces a time limit by itself and stops promptly when cancelled, so the engine
/// can call it in the current task instead of racing it against a timer in another task (one task
/// hop fewer per lookup). ``HTTPDNSProvider`` is one: libcurl enforces the limit.
protocol HTTPDNSSelfTimedResolver: HTTPDNSResolver {
    /// Resolves within `seconds`, throwing `.timedOut` when they run out.
    func resolve(_ host: String, family: HTTPDNSAddressFamily, within seconds: Double) async throws -> HTTPDNSRecordSet
}

/// Asks `resolver` within `seconds`: inline for self-timed resolvers, raced against a timer otherwise.
func resolveWithin(
    _ resolver: any HTTPDNSResolver, _ host: String, family: HTTPDNSAddressFamily, within seconds: Double
) async throws -> HTTPDNSRecordSet {
    if let timed = resolver as? any HTTPDNSSelfTimedResolver {
        return try await timed.resolve(host, family: family, within: seconds)
    }
    return try await withDeadline(seconds: seconds, context: resolver.name) {
        try await resolver.resolve(host, family: family)
    }
}

/// Runs `operation` with a time limit and returns on time even if the operation is slow to honour
/// cancellation (a task group would wait for it); the operation is cancelled when time runs out or the
/// caller is cancelled.
///
/// - Throws: `.timedOut` after `seconds`, `.cancelled` when the caller is cancelled, or what
///   `operation` throws.
func withDeadline<T: Sendable>(
    seconds: Double,
    context: @autoclosure () -> String,
    _ operation: @escaping @Sendable () async throws -> T
) async throws -> T {
    let once = ResumeOnce<T>()
    let context = context()
    return try await withTaskCancellationHandler {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
            once.install(continuation)
            let work = Task {
                do {
                    once.resume(.success(try await operation()))
                } catch {
                    once.resume(.failure(error))
                }
            }
            // A dispatch timer rather than a sleeping task: one task fewer per attempt. It is cancelled
            // when the race ends, so finished lookups do not keep their state alive until it fires.
            let timer = CancellableTimer {
                once.resume(.failure(HTTPDNSError(.timedOut, "no answer within \(seconds) s", source: context)))
            }
            DispatchQueue.global().asyncAfter(deadline: .now() + max(seconds, 0), execute: timer.item)
            once.onFinish {
                work.cancel()
                timer.item.cancel()
            }
        }
    } onCancel: {
        once.resume(.failure(HTTPDNSError(.cancelled, "lookup cancelled", source: context)))
    }
}

/// Resumes a continuation exactly once, whichever of several racers gets there first; a result that
/// arrives before the continuation is installed is kept and delivered at installation.
private final class ResumeOnce<T: Sendable>: Sendable {
    private struct State {
        var continuation: CheckedContinuation<T, any Error>?
        var result: Result<T, any Error>?
        var finished = false
        var cleanup: (@Sendable () -> Void)?
    }

    private let state = HTTPDNSLock(State())

    func install(_ continuation: CheckedContinuation<T, any Error>) {
        let pending: Result<T, any Error>? = state.withLock { state in
            if let result = state.result {
                state.result = nil
                return result
            }
            state.continuation = continuation
            return nil
        }
        if let pending { continuation.resume(with: pending) }
    }

    func onFinish(_ cleanup: @escaping @Sendable () -> Void) {
        let runNow = state.withLock { state -> Bool in
            if state.finished { return true }
            state.cleanup = cleanup
            return false
        }
        if runNow { cleanup() }
    }

    func resume(_ result: Result<T, any Error>) {
        let (continuation, cleanup): (CheckedContinuation<T, any Error>?, (@Sendable () -> Void)?) = state.withLock { state in
            guard !state.finished else { return (nil, nil) }
            state.finished = true
            let cleanup = state.cleanup
            state.cleanup = nil
            if let continuation = state.continuation {
                state.continuation = nil
                return (continuation, cleanup)
            }
            state.result = result
            return (nil, cleanup)
        }
        continuation?.resume(with: result)
        cleanup?()
    }
}

/// A `DispatchWorkItem` to hand across tasks; `cancel()` is thread-safe.
private final class CancellableTimer: @unchecked Sendable {
    let item: DispatchWorkItem

    init(_ body: @escaping @Sendable () -> Void) {
        item = DispatchWorkItem(block: body)
    }
}
