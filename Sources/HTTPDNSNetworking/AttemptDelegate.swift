import Foundation
import HTTPDNSCore
import HTTPDNSTransport
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// One attempt at one address: waits for the response head (or a failure before it), then streams
/// the body straight to the client delegate.
final class AttemptDelegate: HTTPTransportDelegate {
    enum Result: Sendable {
        case delivered
        case redirect(URLRequest)
        case failed(HTTPTransportError)
    }

    private struct State {
        var continuation: CheckedContinuation<Result, Never>?
        var transfer: HTTPTransportTask?
        var headSeen = false
        var redirecting = false
        var cancelWhenKnown = false
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
                let cancelNow = state.withLock { state -> Bool in
                    state.transfer = transfer
                    return state.cancelWhenKnown
                }
                if cancelNow || !task.setTransfer(transfer) { transfer.cancel() }
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
        if interceptRedirects, let next = HTTPDNSRedirect.nextRequest(after: request, response: response) {
            let transfer = state.withLock { state -> HTTPTransportTask? in
                state.headSeen = true
                state.redirecting = true
                if state.transfer == nil { state.cancelWhenKnown = true }
                return state.transfer
            }
            transfer?.cancel()
            resume(.redirect(next))
            return
        }
        state.withLock { $0.headSeen = true }
        let report = self.report.withLock { report -> HTTPDNSConnectionReport in
            report.connectedAddress = head.connectedAddress
            report.httpVersion = head.httpVersion
            report.responseHeaders = head.headers
            report.attempts.append(.init(address: head.connectedAddress, failure: nil))
            return report
        }
        client.didReceive(response: response, connection: report)
        resume(.delivered)
    }

    func didReceiveData(_ data: Data) {
        guard !state.withLock({ $0.redirecting }) else { return }
        client.didReceive(data: data)
    }

    func didComplete(_ result: Swift.Result<HTTPTransportMetrics, HTTPTransportError>) {
        let (headSeen, redirecting) = state.withLock { ($0.headSeen, $0.redirecting) }
        guard headSeen else {
            switch result {
            case .failure(let error):
                resume(.failed(error))
            case .success:
                resume(.failed(HTTPTransportError(.badServerResponse, "no response head", host: originalURL.host)))
            }
            return
        }
        guard !redirecting else { return }
        switch result {
        case .success: client.didComplete(error: nil)
        case .failure(let error): client.didComplete(error: error.urlError)
        }
    }
}
