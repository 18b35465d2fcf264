import Foundation
import HTTPDNSCore
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What `URLSession` would ask or decide itself: redirects, new body streams, timeouts, the body.
extension ProtocolForwarder {
    /// Asks the task's delegate whether to follow a redirect (`willPerformHTTPRedirection`), as
    /// corelibs' own HTTP protocol does; without a delegate the redirect is followed.
    func askRedirect(_ response: HTTPURLResponse, _ next: URLRequest) async -> URLRequest? {
        guard let delegate = task.delegate else { return next }
        let target = delegate
        let (session, task) = (session, task)
        return await withCheckedContinuation { continuation in
            let once = HTTPDNSLock(false)
            session.delegateQueue.addOperation {
                target.urlSession(session, task: task, willPerformHTTPRedirection: response, newRequest: next) { chosen in
                    guard once.withLock({ claimed in defer { claimed = true }; return !claimed }) else { return }
                    continuation.resume(returning: chosen)
                }
            }
        }
    }

    /// Asks the task's delegate for a fresh body stream (`needNewBodyStream`); nil without one.
    func askNewBodyStream() async -> InputStream? {
        guard let delegate = task.delegate else { return nil }
        let target = delegate
        let (session, task) = (session, task)
        let stream: UncheckedBox<InputStream?> = await withCheckedContinuation { continuation in
            let once = HTTPDNSLock(false)
            session.delegateQueue.addOperation {
                target.urlSession(session, task: task, needNewBodyStream: { stream in
                    guard once.withLock({ claimed in defer { claimed = true }; return !claimed }) else { return }
                    continuation.resume(returning: UncheckedBox(stream))
                })
            }
        }
        return stream.value
    }

    /// Fails the load with `URLError(.timedOut)` after `interval` (the resource timeout), unless it
    /// ended before: an entry in ``ResourceDeadlines``, dropped when the load ends.
    func armResourceTimeout(_ interval: TimeInterval) {
        guard interval > 0, interval < TimeInterval(Int32.max) else { return }
        setResourceDeadline(ResourceDeadlines.shared.add(after: interval) { [weak self] in
            guard let self else { return }
            queue.async { self.resourceTimedOut() }
        })
    }

    /// The idle limit corelibs applies: the request's `timeoutInterval` when it was assigned, the
    /// configuration's `timeoutIntervalForRequest` otherwise.
    func idleTimeout(_ request: URLRequest, configuration: URLSessionConfiguration) -> Duration? {
        let seconds = layout.isTimeoutIntervalSet(request) ? request.timeoutInterval : configuration.timeoutIntervalForRequest
        guard seconds > 0, seconds < TimeInterval(Int32.max) else { return nil }
        return .milliseconds(Int64(seconds * 1000))
    }

    /// The body corelibs would send: an upload task's from the task, a data task's from its request.
    static func body(
        _ taskBody: CorelibsLayout.TaskBody?, request: URLRequest, newStream: RequestBody.NewBodyStream?
    ) throws -> RequestBody {
        switch taskBody {
        case .data(let data): RequestBody(data: data)
        case .file(let url): try RequestBody(file: url, newStream: newStream)
        case .stream(let stream): RequestBody(stream: stream, length: length(request), newStream: newStream)
        case .some(.none), nil: RequestBody(request, newStream: newStream)
        }
    }

    static func length(_ request: URLRequest) -> Int64? {
        request.value(forHTTPHeaderField: "Content-Length").flatMap { Int64($0) }
    }
}

/// Carries a non-Sendable value across one hand-over whose ordering makes it safe.
struct UncheckedBox<Value>: @unchecked Sendable {
    var value: Value
    init(_ value: Value) { self.value = value }
}
