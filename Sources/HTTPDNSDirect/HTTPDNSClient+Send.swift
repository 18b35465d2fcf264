import Foundation
import HTTPDNSCore
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
        let collector = ReportingCollector()
        let task = start(request, followRedirects: true, delegate: collector)
        return try await withTaskCancellationHandler {
            try await collector.result()
        } onCancel: {
            task.cancel()
        }
    }
}

/// Collects one response with its report.
private final class ReportingCollector: FinalReportReceiver {
    private struct State {
        var head: (HTTPURLResponse, HTTPDNSConnectionReport)?
        var body = Data()
        var outcome: Result<HTTPDNSClientResponse, any Error>?
        var continuation: CheckedContinuation<HTTPDNSClientResponse, any Error>?
    }

    private let state = HTTPDNSLock(State())

    func result() async throws -> HTTPDNSClientResponse {
        try await withCheckedThrowingContinuation { continuation in
            let done = state.withLock { state -> Result<HTTPDNSClientResponse, any Error>? in
                if let outcome = state.outcome { return outcome }
                state.continuation = continuation
                return nil
            }
            if let done { continuation.resume(with: done) }
        }
    }

    func didReceive(response: HTTPURLResponse, connection: HTTPDNSConnectionReport) {
        state.withLock { $0.head = (response, connection) }
    }

    func didReceive(data: Data) {
        state.withLock { $0.body.append(data) }
    }

    func didFinish(connection: HTTPDNSConnectionReport) {
        state.withLock { state in state.head?.1 = connection }
    }

    func didComplete(error: (any Error)?) {
        let continuation = state.withLock { state -> (CheckedContinuation<HTTPDNSClientResponse, any Error>?, Result<HTTPDNSClientResponse, any Error>) in
            let outcome: Result<HTTPDNSClientResponse, any Error>
            if let error {
                outcome = .failure(error)
            } else if let (response, connection) = state.head {
                outcome = .success(HTTPDNSClientResponse(response: response, body: state.body, connection: connection))
            } else {
                outcome = .failure(URLError(.badServerResponse))
            }
            state.outcome = outcome
            defer { state.continuation = nil }
            return (state.continuation, outcome)
        }
        continuation.0?.resume(with: continuation.1)
    }
}
