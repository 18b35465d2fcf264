import Foundation
import HTTPDNS
@_spi(HTTPDNSPackage) import HTTPDNSCore
import HTTPDNSTransport
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension HTTPDNSClient {
    enum Outcome {
        /// The response went to the delegate; the body and completion follow from the transport.
        case delivered
        /// A redirect to follow with this request, and the redirect answer itself.
        case redirect(URLRequest, RedirectAnswer)
    }

    /// One request/response, over as many addresses as failover needs.
    func exchange(
        _ request: URLRequest, body: RequestBody, interceptRedirects: Bool, options: RequestOptions,
        delegate: any HTTPDNSClientDelegate, task: HTTPDNSClientTask
    ) async throws -> Outcome {
        var request = request
        var cookieStorage: HTTPCookieStorage?
        switch options.cookies {
        case .none:
            break
        case .storeOnly(let storage):
            cookieStorage = storage
        case .sendAndStore(let storage):
            cookieStorage = storage
            HTTPDNSClient.addCookies(to: &request, from: storage)
        }
        guard let url = request.url, let scheme = url.scheme.map({ HTTPDNSASCII.lowercased($0.utf8) }), scheme == "http" || scheme == "https",
              let rawHost = url.host, !rawHost.isEmpty
        else {
            throw URLError(.unsupportedURL, userInfo: [NSLocalizedDescriptionKey: "Only http and https URLs with a host are supported."])
        }
        let host = rawHost.hasPrefix("[") ? String(rawHost.dropFirst().dropLast()) : rawHost
        let started = ContinuousClock.now
        let report = HTTPDNSLock(HTTPDNSConnectionReport(
            host: host, answer: nil, attempts: [], connectedAddress: nil, certificateVerified: scheme == "https",
            viaBlockRedirect: false, httpVersion: ""))

        // Every failure from here on carries the story so far (answer, addresses tried): callers get it
        // through `URLError.httpdnsConnectionReport`.
        do {
            var plan = AddressPlan()
            plan.host = HTTPDNSHostPolicy.normalize(host)
            plan.protected = engine.protects(host)
            plan.port = url.port ?? (scheme == "https" ? 443 : 80)
            let proxy = proxies.proxy(for: url)
            let sticky = plan.protected ? connector.redirectedAddresses(for: plan.host) : nil
            if let sticky {
                // A host found blocked lately goes straight to the redirect addresses (direct, as pinned
                // requests always are): no lookup, no walk over dead addresses.
                plan.sticky = true
                plan.add(sticky)
                plan.localTried = true
                plan.redirectTried = true
                report.withLock { report in
                    report.viaBlockRedirect = true
                    if let proxy { report.proxy = .bypassed(ProxyEnvironment.redacted(proxy)) }
                }
            } else if let proxy, !plan.protected || configuration.proxyPolicy == .respect {
                plan.unpinned = true
                plan.proxy = proxy
                report.withLock { $0.proxy = .used(ProxyEnvironment.redacted(proxy)) }
            } else if plan.protected {
                if let proxy { report.withLock { $0.proxy = .bypassed(ProxyEnvironment.redacted(proxy)) } }
                await connector.resolve(into: &plan, report: report)
            } else {
                plan.unpinned = true
            }
            let context = AttemptContext(
                request: request, url: url, body: body, interceptRedirects: interceptRedirects, cookieStorage: cookieStorage,
                delegate: delegate, task: task, report: report, started: started, options: options)
            return try await connect(&plan, context)
        } catch {
            throw HTTPDNSClientFailure(underlying: error, report: report.withLock { $0 })
        }
    }

    /// What every attempt of one exchange shares.
    struct AttemptContext: Sendable {
        var request: URLRequest
        var url: URL
        var body: RequestBody
        var interceptRedirects: Bool
        var cookieStorage: HTTPCookieStorage?
        var delegate: any HTTPDNSClientDelegate
        var task: HTTPDNSClientTask
        var report: HTTPDNSLock<HTTPDNSConnectionReport>
        var started: ContinuousClock.Instant
        /// Timeouts, decoding and upload progress as the URL protocol asks.
        var options: RequestOptions
    }

    func makeTransportRequest(
        _ request: URLRequest, url: URL, pinned: HTTPDNSIPAddress?, body: RequestBody, proxy: String? = nil,
        options: RequestOptions = .init()
    ) -> HTTPTransportRequest {
        var transportRequest = HTTPTransportRequest(url: url, method: request.httpMethod ?? "GET")
        transportRequest.headers = (request.allHTTPHeaderFields ?? [:]).sorted { $0.key < $1.key }
            .map { HTTPTransportHeader(name: $0.key, value: $0.value) }
        transportRequest.body = body.transportBody(progress: options.bodyProgress)
        transportRequest.pinnedAddresses = pinned.map { [$0] } ?? []
        transportRequest.trust = engine.configuration.trust
        transportRequest.proxy = proxy
        transportRequest.decodesContent = options.decodesContent
        transportRequest.receiveBuffer = options.receiveBuffer
        if let idle = options.idleTimeout {
            transportRequest.timeouts = .init(
                connect: min(configuration.connectTimeout, idle), total: configuration.requestTimeout, idle: idle)
        } else {
            let total = request.timeoutInterval > 0 ? Duration.milliseconds(Int64(request.timeoutInterval * 1000)) : nil
            transportRequest.timeouts = .init(
                connect: configuration.connectTimeout, total: configuration.requestTimeout,
                idle: min(total ?? configuration.idleTimeout, configuration.idleTimeout))
        }
        return transportRequest
    }

    /// The `URLError` an app expects for `error`.
    static func urlError(_ error: any Error, url: URL?) -> URLError {
        if let failure = error as? HTTPDNSClientFailure {
            let base = urlError(failure.underlying, url: url)
            var info = base.userInfo
            info[HTTPDNSClientFailure.reportKey] = failure.report
            info[HTTPDNSClientFailure.underlyingKey] = failure.underlying
            return URLError(base.code, userInfo: info)
        }
        if let error = error as? URLError { return error }
        if let error = error as? HTTPTransportError { return error.urlError }
        if error is CancellationError {
            return URLError(.cancelled, userInfo: [NSLocalizedDescriptionKey: "The request was cancelled."])
        }
        if let error = error as? HTTPDNSError {
            let code: URLError.Code = error.code == .cancelled ? .cancelled : (error.code == .timedOut ? .timedOut : .cannotFindHost)
            var info: [String: Any] = [NSLocalizedDescriptionKey: error.errorDescription ?? "", "NSDebugDescription": error.description]
            if let url { info[NSURLErrorFailingURLErrorKey] = url }
            return URLError(code, userInfo: info)
        }
        return URLError(.unknown, userInfo: [NSLocalizedDescriptionKey: "The request failed.", "NSDebugDescription": String(describing: error)])
    }
}
