import Foundation
import HTTPDNSCore
import HTTPDNSTransport
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A whole response with the story of how it was reached.
public struct HTTPDNSClientResponse: Sendable {
    /// The response head, for the request's URL (the last hop's after redirects).
    public var response: HTTPURLResponse
    /// The whole body.
    public var body: Data
    /// Which addresses were tried, which one answered, SNI and verification.
    public var connection: HTTPDNSConnectionReport
}

extension HTTPDNSClient {
    /// Sends `request` (following redirects) and returns the body together with the connection
    /// report: for diagnostics, `-v` output and the demo.
    ///
    /// - Throws: `URLError`, as ``data(for:)``.
    public func send(_ request: URLRequest) async throws -> HTTPDNSClientResponse {
        let collector = ReportingCollector(responses: responses)
        let task = HTTPDNSClientTask()
        var options = RequestOptions()
        options.cookies = ownCookies
        // The exchange runs in the caller's task, not in one of its own: no task to start and no
        // second task to wake when the head comes. A small body is then usually complete before the
        // caller asks for it, so one wake-up from the transport's thread serves the whole request
        // (bench row 5).
        return try await withTaskCancellationHandler {
            await run(request, followRedirects: true, options: options, delegate: collector, task: task)
            return try await collector.result()
        } onCancel: {
            task.cancel()
        }
    }
}

/// Collects one response with its report.
///
/// It takes the head as the transport gave it and makes the `HTTPURLResponse` in ``result()``, on the
/// caller's task: Foundation's header canonicalisation is then not on the transport's thread, which
/// every request shares.
private final class ReportingCollector: FinalReportReceiver {
    private enum Head {
        case response(HTTPURLResponse)
        case transport(HTTPTransportResponseHead, URL)
    }

    private struct Collected {
        var head: Head
        var body: Data
        var connection: HTTPDNSConnectionReport
    }

    private struct State {
        var head: (Head, HTTPDNSConnectionReport)?
        var body = Data()
        var outcome: Result<Collected, any Error>?
        var continuation: CheckedContinuation<Collected, any Error>?
    }

    private let state = HTTPDNSLock(State())
    private let responses: ResponseMemo

    init(responses: ResponseMemo) {
        self.responses = responses
    }

    func result() async throws -> HTTPDNSClientResponse {
        let collected = try await withCheckedThrowingContinuation { continuation in
            let done = state.withLock { state -> Result<Collected, any Error>? in
                if let outcome = state.outcome { return outcome }
                state.continuation = continuation
                return nil
            }
            if let done { continuation.resume(with: done) }
        }
        let response: HTTPURLResponse
        switch collected.head {
        case .response(let made): response = made
        case .transport(let head, let url): response = responses.response(for: head, url: url)
        }
        return HTTPDNSClientResponse(response: response, body: collected.body, connection: collected.connection)
    }

    func didReceive(response: HTTPURLResponse, connection: HTTPDNSConnectionReport) {
        state.withLock { $0.head = (.response(response), connection) }
    }

    func didReceive(head: HTTPTransportResponseHead, url: URL, connection: HTTPDNSConnectionReport) {
        state.withLock { $0.head = (.transport(head, url), connection) }
    }

    func didReceive(data: Data) {
        state.withLock { $0.body.append(data) }
    }

    func didFinish(connection: HTTPDNSConnectionReport) {
        state.withLock { state in state.head?.1 = connection }
    }

    func didComplete(error: (any Error)?) {
        // Cancelled while the body comes, the request ends twice: the race (still waiting for the
        // end, see AttemptDelegate) and the transfer both report it. The first end is the outcome.
        let continuation = state.withLock { state -> (CheckedContinuation<Collected, any Error>?, Result<Collected, any Error>)? in
            guard state.outcome == nil else { return nil }
            let outcome: Result<Collected, any Error>
            if let error {
                outcome = .failure(error)
            } else if let (head, connection) = state.head {
                outcome = .success(Collected(head: head, body: state.body, connection: connection))
            } else {
                outcome = .failure(URLError(.badServerResponse))
            }
            state.outcome = outcome
            defer { state.continuation = nil }
            return (state.continuation, outcome)
        }
        if let (waiting, outcome) = continuation { waiting?.resume(with: outcome) }
    }
}
