import Foundation
import HTTPDNSCore
import HTTPDNSNetworking
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// One request and its response within a fetch: receives ``HTTPDNSClient``'s events, writes the
/// head (`-i`) and the body to the output as they arrive, and tells the fetch how the hop ended.
///
/// Each chunk is written on the client's callback thread before the next one is delivered, so a
/// slow disk or reader slows the download down instead of filling memory.
final class FetcherHop: HTTPDNSClientDelegate {
    /// How a hop ended, when it did not fail.
    enum Outcome: Sendable {
        /// The response is the result; its body, if wanted, is written.
        case finished
        /// A redirect to follow (`-L`), with the status that asked for it.
        case redirect(URLRequest, status: Int)
    }

    private struct State {
        var continuation: CheckedContinuation<Outcome, any Error>?
        var task: HTTPDNSClientTask?
        var stopRequested = false
        /// Set when the head alone decided the hop (a redirect to follow, `-f`, `-I`): the rest of
        /// the response is not wanted and the transfer is cancelled.
        var decided: Result<Outcome, ToolFailure>?
        /// Set when the output could not be written; the transfer is cancelled.
        var writeFailure: ToolFailure?
        var progress: ProgressBar?

        var wantsBody: Bool {
            if case .none = decided, case .none = writeFailure { return true }
            return false
        }
    }

    private let state = HTTPDNSLock(State())
    private let request: URLRequest
    private let options: FetchOptions
    private let output: HTTPDNSLock<OutputFile>
    private let trustText: String

    init(request: URLRequest, options: FetchOptions, output: HTTPDNSLock<OutputFile>, trustText: String) {
        self.request = request
        self.options = options
        self.output = output
        self.trustText = trustText
    }

    /// Sends the request (redirects are handed back, not followed) and waits for its end.
    /// - Throws: ``ToolFailure`` for `-f`, a bad redirect or an output failure; the client's
    ///   `URLError` for anything on the way to the server (`.cancelled` when the task is cancelled).
    func run(on client: HTTPDNSClient) async throws -> Outcome {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                state.withLock { $0.continuation = continuation }
                let task = client.start(request, followRedirects: false, delegate: self)
                let stopNow = state.withLock { state -> Bool in
                    state.task = task
                    return state.stopRequested
                }
                if stopNow { task.cancel() }
            }
        } onCancel: {
            stop()
        }
    }

    /// Cancels the client's task, now or as soon as it exists.
    private func stop() {
        let task = state.withLock { state -> HTTPDNSClientTask? in
            state.stopRequested = true
            return state.task
        }
        task?.cancel()
    }

    func didReceive(response: HTTPURLResponse, connection: HTTPDNSConnectionReport) {
        if options.verbose {
            Fetcher.verboseExchange(request, report: connection, status: response.statusCode, trustText: trustText)
        }
        if options.include, let failure = write(Data(Fetcher.headText(status: response.statusCode, report: connection).utf8)) {
            state.withLock { $0.writeFailure = failure }
            stop()
            return
        }
        if let decision = decide(response) {
            state.withLock { $0.decided = decision }
            stop()
            return
        }
        let length = response.expectedContentLength >= 0 ? response.expectedContentLength : nil
        let showProgress = !options.silent && !options.verbose && (options.outputPath != nil || !Output.stdoutIsTerminal)
        state.withLock { $0.progress = ProgressBar(total: length, enabled: showProgress) }
    }

    /// What the head alone settles: a redirect to follow, an HTTP error with `-f`, a head-only request.
    private func decide(_ response: HTTPURLResponse) -> Result<Outcome, ToolFailure>? {
        let status = response.statusCode
        if options.followRedirects, HTTPDNSRedirect.statusCodes.contains(status),
           let location = response.value(forHTTPHeaderField: "Location") {
            guard let next = HTTPDNSRedirect.nextRequest(after: request, response: response) else {
                return .failure(ToolFailure("redirect to unsupported location '\(location)'"))
            }
            return .success(.redirect(next, status: status))
        }
        if options.failOnHTTPError, status >= 400 {
            return .failure(ToolFailure("HTTP status \(status) from \(request.url?.absoluteString ?? "?")"))
        }
        if options.headOnly || request.httpMethod == "HEAD" { return .success(.finished) }
        return nil
    }

    func didReceive(data: Data) {
        guard state.withLock({ $0.wantsBody }) else { return }
        if let failure = write(data) {
            state.withLock { $0.writeFailure = failure }
            stop()
            return
        }
        state.withLock { $0.progress?.advance(by: data.count) }
    }

    func didComplete(error: (any Error)?) {
        let (continuation, result) = state.withLock { state -> (CheckedContinuation<Outcome, any Error>?, Result<Outcome, any Error>) in
            state.progress?.finish()
            state.progress = nil
            let result: Result<Outcome, any Error>
            if let failure = state.writeFailure {
                result = .failure(failure)
            } else if let decided = state.decided {
                // The cancellation that followed the decision is ours, not a failure.
                result = decided.mapError { $0 }
            } else if let error {
                result = .failure(error)
            } else {
                result = .success(.finished)
            }
            defer { state.continuation = nil }
            return (state.continuation, result)
        }
        continuation?.resume(with: result)
    }

    /// Writes to the output; the failure, if any.
    private func write(_ data: Data) -> ToolFailure? {
        do {
            try output.withLock { (file: inout OutputFile) throws(ToolFailure) in try file.write(data) }
            return nil
        } catch {
            return error
        }
    }
}
