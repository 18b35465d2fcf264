import Foundation
import HTTPDNSCore
import HTTPDNSTransport
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// One attempt at one address: waits for the response head (or a failure before it), then streams
/// the body straight to the client delegate.
///
/// A redirect's body is kept (up to ``redirectBodyLimit``) and the attempt ends when it is complete,
/// so that a redirect the app refuses is delivered whole, as `URLSession` delivers it.
final class AttemptDelegate: HTTPTransportDelegate {
    enum Result: Sendable {
        case delivered
        case redirect(URLRequest, RedirectAnswer)
        case failed(HTTPTransportError)
    }

    /// The most bytes of a redirect's body kept; a longer one is cut off (and its transfer stopped).
    static let redirectBodyLimit = 1 << 20

    private struct State {
        var continuation: CheckedContinuation<Result, Never>?
        var transfer: HTTPTransportTask?
        var headSeen = false
        var redirect: (next: URLRequest, answer: RedirectAnswer)?
    }

    private let state = HTTPDNSLock(State())
    private let originalURL: URL
    private let interceptRedirects: Bool
    private let client: any HTTPDNSClientDelegate
    private let report: HTTPDNSLock<HTTPDNSConnectionReport>
    private let request: URLRequest
    private let cookieStorage: HTTPCookieStorage?

    init(
        originalURL: URL, interceptRedirects: Bool, client: any HTTPDNSClientDelegate, report: HTTPDNSConnectionReport,
        request: URLRequest, cookieStorage: HTTPCookieStorage?
    ) {
        self.originalURL = originalURL
        self.interceptRedirects = interceptRedirects
        self.client = client
        self.report = HTTPDNSLock(report)
        self.request = request
        self.cookieStorage = cookieStorage
    }

    func run(transport: HTTPTransport, request: HTTPTransportRequest, task: HTTPDNSClientTask) async -> Result {
        await withCheckedContinuation { continuation in
            state.withLock { $0.continuation = continuation }
            do throws(HTTPTransportError) {
                let transfer = try transport.start(request, delegate: self)
                state.withLock { $0.transfer = transfer }
                if !task.setTransfer(transfer) { transfer.cancel() }
            } catch {
                resume(.failed(error))
            }
        }
    }

    private func resume(_ result: Result) {
        let continuation = state.withLock { state -> CheckedContinuation<Result, Never>? in
            defer { state.continuation = nil }
            return state.continuation
        }
        continuation?.resume(returning: result)
    }

    func didReceiveResponse(_ head: HTTPTransportResponseHead) {
        let response = HTTPDNSClient.makeResponse(head, url: originalURL)
        if let cookieStorage, request.httpShouldHandleCookies {
            HTTPDNSClient.storeCookies(from: head, url: originalURL, in: cookieStorage)
        }
        let report = self.report.withLock { report -> HTTPDNSConnectionReport in
            report.connectedAddress = head.connectedAddress
            report.httpVersion = head.httpVersion
            report.responseHeaders = head.headers
            report.attempts.append(.init(address: head.connectedAddress, failure: nil))
            return report
        }
        if interceptRedirects, let next = HTTPDNSRedirect.nextRequest(after: request, response: response) {
            state.withLock { state in
                state.headSeen = true
                state.redirect = (next, RedirectAnswer(response: response, body: Data(), connection: report))
            }
            return
        }
        state.withLock { $0.headSeen = true }
        client.didReceive(response: response, connection: report)
        resume(.delivered)
    }

    func didReceiveData(_ data: Data) {
        let (redirecting, overflow) = state.withLock { state -> (Bool, HTTPTransportTask?) in
            guard state.redirect != nil else { return (false, nil) }
            let room = Self.redirectBodyLimit - state.redirect!.answer.body.count
            state.redirect!.answer.body.append(data.prefix(max(0, room)))
            return (true, data.count > room ? state.transfer : nil)
        }
        overflow?.cancel()
        guard !redirecting else { return }
        client.didReceive(data: data)
    }

    func didComplete(_ result: Swift.Result<HTTPTransportMetrics, HTTPTransportError>) {
        let (headSeen, redirect) = state.withLock { ($0.headSeen, $0.redirect) }
        guard headSeen else {
            switch result {
            case .failure(let error):
                resume(.failed(error))
            case .success:
                resume(.failed(HTTPTransportError(.badServerResponse, "no response head", host: originalURL.host)))
            }
            return
        }
        if let redirect {
            // A redirect cut off (too long, or the connection dropped) is still a redirect.
            resume(.redirect(redirect.next, redirect.answer))
            return
        }
        switch result {
        case .success: client.didComplete(error: nil)
        case .failure(let error): client.didComplete(error: error.urlError)
        }
    }
}
