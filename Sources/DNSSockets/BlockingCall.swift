import Dispatch
import Foundation
import HTTPDNSCore

/// Runs one blocking job on a thread of its own and hands its result to an async caller.
///
/// Blocking calls (`poll`, `recv`, `getaddrinfo`) must never run on Swift's cooperative pool: a few
/// slow lookups would starve every other task (house style §7). The caller's continuation is resumed
/// exactly once, by whichever comes first: the job's result, the timeout, or task cancellation. A
/// job that is still running when the caller has moved on finishes in the background; jobs that can
/// stop early poll ``isFinished``.
final class BlockingCall<Value: Sendable>: Sendable {
    private struct State {
        var continuation: CheckedContinuation<Value, any Error>?
        var pending: Result<Value, HTTPDNSError>?
        var finished = false
    }

    private let state = HTTPDNSLock(State())

    /// True once a result, timeout or cancellation has been delivered; the job may stop.
    var isFinished: Bool { state.withLock { $0.finished } }

    /// Delivers `result` unless something was delivered already. Returns whether it was delivered.
    @discardableResult
    func finish(_ result: Result<Value, HTTPDNSError>) -> Bool {
        let continuation: CheckedContinuation<Value, any Error>? = state.withLock { state in
            guard !state.finished else { return nil }
            state.finished = true
            guard let continuation = state.continuation else {
                state.pending = result
                return nil
            }
            state.continuation = nil
            return continuation
        }
        continuation?.resume(with: result.mapError { $0 as any Error })
        return continuation != nil
    }

    private func install(_ continuation: CheckedContinuation<Value, any Error>) {
        let early: Result<Value, HTTPDNSError>? = state.withLock { state in
            if let pending = state.pending {
                state.pending = nil
                return pending
            }
            state.continuation = continuation
            return nil
        }
        if let early { continuation.resume(with: early.mapError { $0 as any Error }) }
    }

    /// Runs `job` on a new thread and waits for it without blocking the caller's thread.
    ///
    /// - Parameters:
    ///   - timeout: deliver `HTTPDNSError.timedOut` after this long even if the job is still running;
    ///     `nil` when the job enforces its own deadline.
    ///   - job: the blocking work; it may check `call.isFinished` to give up early.
    /// - Throws: the job's `HTTPDNSError`, `.timedOut`, or `.cancelled` when the task is cancelled.
    static func run(
        timeout: Duration?, timeoutDetail: String = "no answer in time",
        _ job: @escaping @Sendable (BlockingCall<Value>) -> Result<Value, HTTPDNSError>
    ) async throws -> Value {
        let call = BlockingCall<Value>()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                call.install(continuation)
                if Task.isCancelled {
                    call.finish(.failure(HTTPDNSError(.cancelled, "cancelled before start")))
                    return
                }
                let thread = Thread { call.finish(job(call)) }
                thread.name = "DNSSockets blocking call"
                thread.start()
                if let timeout {
                    let nanoseconds = max(0, timeout.nanosecondsClamped)
                    DispatchQueue.global().asyncAfter(deadline: .now() + .nanoseconds(nanoseconds)) {
                        call.finish(.failure(HTTPDNSError(.timedOut, timeoutDetail)))
                    }
                }
            }
        } onCancel: {
            call.finish(.failure(HTTPDNSError(.cancelled, "task cancelled")))
        }
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
