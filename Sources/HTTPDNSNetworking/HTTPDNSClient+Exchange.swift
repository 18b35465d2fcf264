import Foundation
import HTTPDNS
import HTTPDNSCore
import HTTPDNSTransport
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension HTTPDNSClient {
    enum Outcome {
        /// The response went to the delegate; the body and completion follow from the transport.
        case delivered
        /// A redirect to follow with this request.
        case redirect(URLRequest)
    }

    /// One request/response, over as many addresses as failover needs.
    func exchange(
        _ request: URLRequest, interceptRedirects: Bool, cookies: CookieHandling, delegate: any HTTPDNSClientDelegate,
        task: HTTPDNSClientTask
    ) async throws -> Outcome {
        var request = request
        var cookieStorage: HTTPCookieStorage?
        switch cookies {
        case .none:
            break
        case .storeOnly(let storage):
            cookieStorage = storage
        case .sendAndStore(let storage):
            cookieStorage = storage
            HTTPDNSClient.addCookies(to: &request, from: storage)
        }
        guard let url = request.url, let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https",
              let rawHost = url.host, !rawHost.isEmpty
        else {
            throw URLError(.unsupportedURL, userInfo: [NSLocalizedDescriptionKey: "only http and https URLs with a host are supported"])
        }
        let host = rawHost.hasPrefix("[") ? String(rawHost.dropFirst().dropLast()) : rawHost
        let body = try RequestBody(request)
        var report = HTTPDNSConnectionReport(
            host: host, answer: nil, attempts: [], connectedAddress: nil, certificateVerified: scheme == "https",
            viaBlockRedirect: false, httpVersion: "")

        // Every failure from here on carries the story so far (answer, addresses tried): callers get it
        // through `URLError.httpdnsConnectionReport`.
        do {
            var plan = AddressPlan()
            if engine.protects(host) {
                do {
                    let answer = try await engine.resolve(host)
                    report.answer = answer
                    plan.add(answer.addresses)
                    plan.localTried = answer.origin == .localDNS
                } catch {
                    plan.resolutionError = error
                    plan.localTried = true  // the engine already fell back to LocalDNS (unless HTTPDNS-only)
                }
            } else {
                plan.unpinned = true
            }

            var lastError: HTTPTransportError?
            while true {
                try Task.checkCancellation()
                guard let address = await nextAddress(&plan, host: host, lastError: lastError, report: &report) else {
                    if let lastError { throw lastError }
                    if let error = plan.resolutionError { throw error }
                    throw URLError(.cannotFindHost, userInfo: [NSLocalizedDescriptionKey: "no address for \(host)"])
                }
                let transportRequest = makeTransportRequest(request, url: url, pinned: address, body: body)
                let attempt = AttemptDelegate(
                    originalURL: url, interceptRedirects: interceptRedirects, client: delegate, report: report,
                    request: request, cookieStorage: cookieStorage)
                let result = await attempt.run(transport: transport, request: transportRequest, task: task)
                switch result {
                case .delivered:
                    return .delivered
                case .redirect(let next):
                    return .redirect(next)
                case .failed(let error):
                    report.attempts.append(.init(address: address, failure: error.description))
                    if error.code == .cancelled || task.isCancelled { throw CancellationError() }
                    if error.code == .serverCertificateUntrusted || error.code == .secureConnectionFailed {
                        // Fail closed: the address (maybe from a stale cache entry) is not the real host's.
                        engine.invalidate(host)
                        throw error
                    }
                    guard let address, HTTPDNSClient.isConnectFailure(error) else { throw error }
                    engine.reportUnreachable(address)
                    guard body.isReplayable(after: error) else { throw error }
                    lastError = error
                }
            }
        } catch {
            throw HTTPDNSClientFailure(underlying: error, report: report)
        }
    }

    /// Picks the next address: the answer's, then LocalDNS's, then the block-redirect endpoint's.
    private func nextAddress(
        _ plan: inout AddressPlan, host: String, lastError: HTTPTransportError?, report: inout HTTPDNSConnectionReport
    ) async -> HTTPDNSIPAddress?? {
        if plan.unpinned {
            guard !plan.unpinnedUsed else { return nil }
            plan.unpinnedUsed = true
            return .some(nil)
        }
        if let next = plan.next() { return next }
        if !plan.localTried {
            plan.localTried = true
            if let local = try? await engine.resolveLocally(host) {
                plan.add(local.addresses)
                if let next = plan.next() { return next }
            }
        }
        let blocked = lastError.map(HTTPDNSClient.isBlockSignal) ?? (plan.resolutionError != nil)
        if !plan.redirectTried, blocked, let redirect = configuration.blockRedirect {
            plan.redirectTried = true
            if let records = try? await redirect.resolve(host, family: engine.configuration.family) {
                // The redirect endpoint is a network answer like any HTTPDNS one: same hygiene rules.
                plan.add(engine.configuration.hygiene.filter(records, family: engine.configuration.family).kept)
                report.viaBlockRedirect = true
                if let next = plan.next() { return next }
            }
        }
        return nil
    }

    func makeTransportRequest(_ request: URLRequest, url: URL, pinned: HTTPDNSIPAddress?, body: RequestBody) -> HTTPTransportRequest {
        var transportRequest = HTTPTransportRequest(url: url, method: request.httpMethod ?? "GET")
        transportRequest.headers = (request.allHTTPHeaderFields ?? [:]).sorted { $0.key < $1.key }
            .map { HTTPTransportHeader(name: $0.key, value: $0.value) }
        transportRequest.body = body.transportBody()
        transportRequest.pinnedAddresses = pinned.map { [$0] } ?? []
        transportRequest.trust = engine.configuration.trust
        let total = request.timeoutInterval > 0 ? Duration.milliseconds(Int64(request.timeoutInterval * 1000)) : nil
        transportRequest.timeouts = .init(
            connect: configuration.connectTimeout, total: configuration.requestTimeout,
            idle: min(total ?? configuration.idleTimeout, configuration.idleTimeout))
        return transportRequest
    }

    /// Failures where the request surely or probably did not reach a server: worth the next address.
    static func isConnectFailure(_ error: HTTPTransportError) -> Bool {
        switch error.code {
        case .cannotConnectToHost, .cannotFindHost: true
        case .timedOut, .networkConnectionLost: error.requestBytesSent == 0
        default: false
        }
    }

    /// Failures that look like a blocked domain (seed 003: cannot find host / cannot connect / proxy).
    static func isBlockSignal(_ error: HTTPTransportError) -> Bool {
        error.code == .cannotFindHost || error.code == .cannotConnectToHost
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

/// The addresses still to try for one request, in order, without repeats.
struct AddressPlan {
    private var queue: [HTTPDNSIPAddress] = []
    private var tried = Set<HTTPDNSIPAddress>()
    var unpinned = false
    var unpinnedUsed = false
    var localTried = false
    var redirectTried = false
    var resolutionError: (any Error)?

    /// Adds addresses, alternating IPv6 and IPv4 when both are present (RFC 8305's interleaving).
    mutating func add(_ addresses: [HTTPDNSIPAddress]) {
        let fresh = addresses.filter { !tried.contains($0) && !queue.contains($0) }
        let v6 = fresh.filter { $0.family == .v6 }
        let v4 = fresh.filter { $0.family == .v4 }
        var merged: [HTTPDNSIPAddress] = []
        let first = fresh.first?.family == .v6 ? v6 : v4
        let second = fresh.first?.family == .v6 ? v4 : v6
        for index in 0..<max(first.count, second.count) {
            if index < first.count { merged.append(first[index]) }
            if index < second.count { merged.append(second[index]) }
        }
        queue += merged
    }

    mutating func next() -> HTTPDNSIPAddress? {
        guard !queue.isEmpty else { return nil }
        let address = queue.removeFirst()
        tried.insert(address)
        return address
    }
}
