import Foundation
import HTTPDNS
import HTTPDNSCore
import HTTPDNSTransport
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// One attempt at one address: waits for the response head (or a failure before it), then streams
/// the body straight to the client delegate.
///
/// A redirect's body is kept (up to ``redirectBodyLimit``) and the attempt's result comes when it is
/// complete, so that a redirect the app refuses is delivered whole, as `URLSession` delivers it.
final class AttemptDelegate: HTTPTransportDelegate {
    enum Result: Sendable {
        case delivered
        case redirect(URLRequest, RedirectAnswer)
        case failed(HTTPTransportError)
    }

    /// The most bytes of a redirect's body kept; a longer one is cut off (and its transfer stopped).
    static let redirectBodyLimit = 1 << 20

    private struct State {
        var onResult: (@Sendable (Result) -> Void)?
        var transfer: HTTPTransportTask?
        var headSeen = false
        var redirect: (next: URLRequest, answer: RedirectAnswer)?
    }

    private let state = HTTPDNSLock(State())
    private let originalURL: URL
    private let interceptRedirects: Bool
    private let client: any HTTPDNSClientDelegate
    /// `client` when it collects the whole response (``HTTPDNSClient/send(_:)``): it takes the
    /// transport's head and makes the `HTTPURLResponse` itself, off the transport's thread.
    private let collector: (any FinalReportReceiver)?
    /// The exchange's report, shared by its attempts: what one attempt's head carries includes what
    /// the others learnt (addresses raced past, failures).
    private let report: HTTPDNSLock<HTTPDNSConnectionReport>
    private let request: URLRequest
    private let cookieStorage: HTTPCookieStorage?
    /// When the exchange started (before resolution): first-byte and total times count from here.
    private let started: ContinuousClock.Instant
    /// Where the client's `HTTPURLResponse`s are made (a repeated head gets the last one again).
    private let responses: ResponseMemo
    /// Where to remember the connect time of a new connection to the pinned address.
    private let ranking: (engine: HTTPDNSEngine, address: HTTPDNSIPAddress)?

    init(
        originalURL: URL, interceptRedirects: Bool, client: any HTTPDNSClientDelegate,
        report: HTTPDNSLock<HTTPDNSConnectionReport>, request: URLRequest, cookieStorage: HTTPCookieStorage?,
        started: ContinuousClock.Instant, responses: ResponseMemo, ranking: (HTTPDNSEngine, HTTPDNSIPAddress)? = nil
    ) {
        self.responses = responses
        self.ranking = ranking
        self.originalURL = originalURL
        self.interceptRedirects = interceptRedirects
        self.client = client
        self.collector = client as? any FinalReportReceiver
        self.report = report
        self.request = request
        self.cookieStorage = cookieStorage
        self.started = started
    }

    /// Starts the transfer; `onResult` is called once, with its head or failure (on the transport's
    /// thread, or on this one when the request cannot start).
    ///
    /// - Parameter register: told the transfer as soon as it exists; returning false cancels it
    ///   (the request was cancelled, or another attempt won the race meanwhile).
    func start(
        transport: HTTPTransport, request: HTTPTransportRequest, register: (HTTPTransportTask) -> Bool,
        onResult: @escaping @Sendable (Result) -> Void
    ) {
        state.withLock { $0.onResult = onResult }
        do throws(HTTPTransportError) {
            let transfer = try transport.start(request, delegate: self)
            state.withLock { $0.transfer = transfer }
            if !register(transfer) { transfer.cancel() }
        } catch {
            resume(.failed(error))
        }
    }

    private func resume(_ result: Result) {
        let onResult = state.withLock { state -> (@Sendable (Result) -> Void)? in
            defer { state.onResult = nil }
            return state.onResult
        }
        onResult?(result)
    }

    func didReceiveResponse(_ head: HTTPTransportResponseHead) {
        // The `HTTPURLResponse` is made here only when something here reads it or the client takes
        // no other form (Foundation canonicalises every header name on the way in, measured at a
        // quarter of the transport thread's time in bench row 5).
        let redirecting = interceptRedirects && HTTPDNSRedirect.statusCodes.contains(head.statusCode)
        let response = redirecting || collector == nil ? responses.response(for: head, url: originalURL) : nil
        if let cookieStorage, request.httpShouldHandleCookies {
            HTTPDNSClient.storeCookies(from: head, url: originalURL, in: cookieStorage)
        }
        let firstByte = started.duration(to: .now)
        if let ranking, head.timings.newConnection {
            ranking.engine.recordConnectTime(ranking.address, head.timings.tcpConnect)
        }
        let report = self.report.withLock { report -> HTTPDNSConnectionReport in
            report.connectedAddress = head.connectedAddress
            report.httpVersion = head.httpVersion
            report.responseHeaders = head.headers
            report.attempts.append(.init(address: head.connectedAddress, failure: nil))
            report.timings.connect = head.timings.tcpConnect
            report.timings.tls = head.timings.tls
            report.timings.firstByte = firstByte
            return report
        }
        if redirecting, let response, let next = HTTPDNSRedirect.nextRequest(after: request, response: response) {
            state.withLock { state in
                state.headSeen = true
                state.redirect = (next, RedirectAnswer(response: response, body: Data(), connection: report))
            }
            return
        }
        state.withLock { $0.headSeen = true }
        if let collector, response == nil {
            collector.didReceive(head: head, url: originalURL, connection: report)
        } else {
            client.didReceive(response: response ?? responses.response(for: head, url: originalURL), connection: report)
        }
        // A collector's caller waits for the whole body anyway: its race learns of the win at the
        // end (``didComplete(_:)``), so that one wake-up of the caller's task serves both. Any other
        // race learns of it after this turn of the transport's loop (bench row 4: waking its task
        // from here was a tenth of the loop thread's time).
        guard collector == nil else { return }
        if let transfer = state.withLock({ $0.transfer }) {
            transfer.afterTurn { self.resume(.delivered) }
        } else {
            resume(.delivered)
        }
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
        // The transfer holds this delegate until it is done; letting go of it here ends the cycle,
        // so neither outlives the request.
        let (headSeen, redirect) = state.withLock { state in
            state.transfer = nil
            return (state.headSeen, state.redirect)
        }
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
        // After the client's end: a collector's caller finds the whole response when it wakes.
        defer { resume(.delivered) }
        switch result {
        case .success:
            if let collector {
                let total = started.duration(to: .now)
                collector.didFinish(connection: report.withLock { report in
                    report.timings.total = total
                    return report
                })
            }
            client.didComplete(error: nil)
        case .failure(let error):
            client.didComplete(error: error.urlError)
        }
    }
}

/// A client delegate that collects the whole response (``HTTPDNSClient/send(_:)``): it takes the head
/// in the transport's form, and the report once more when the body is complete, with the total time.
protocol FinalReportReceiver: HTTPDNSClientDelegate {
    /// The response head as the transport gave it, in place of ``HTTPDNSClientDelegate/didReceive(response:connection:)``
    /// (which still comes for a redirect handed over whole): the receiver makes the `HTTPURLResponse`
    /// for `url` with ``ResponseMemo/response(for:url:)`` when it needs it.
    func didReceive(head: HTTPTransportResponseHead, url: URL, connection: HTTPDNSConnectionReport)
    /// The report with the total time; called just before `didComplete(error: nil)`.
    func didFinish(connection: HTTPDNSConnectionReport)
}
