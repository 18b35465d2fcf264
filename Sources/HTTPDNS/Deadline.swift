import HTTPDNSCore

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
            let timer = Task {
                try? await Task.sleep(for: .seconds(max(seconds, 0)))
                once.resume(.failure(HTTPDNSError(.timedOut, "no answer within \(seconds) s", source: context)))
            }
            once.onFinish {
                work.cancel()
                timer.cancel()
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
