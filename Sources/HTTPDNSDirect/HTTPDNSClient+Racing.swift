import Foundation
import HTTPDNS
import HTTPDNSCore
import HTTPDNSTransport
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension HTTPDNSClient {
    /// Runs attempts until one delivers a response head (or a redirect), staggering them by the
    /// connection attempt delay (RFC 8305 §5) and starting the next at once when one fails.
    func connect(_ plan: inout AddressPlan, _ context: AttemptContext) async throws -> Outcome {
        // A loser that fails after the race is booked as any failed address (reported under the
        // protected host), by then without a place in this request's connection report.
        let connector = self.connector
        let target = plan.protected ? (host: plan.host, port: plan.port) : nil
        let race = ConnectionRace(engine: engine, report: context.report, task: context.task, lingering: racedPast) { address, error in
            connector.connectFailed(address, error: error, reportingAs: target)
        }
        do {
            let outcome = try await withTaskCancellationHandler {
                try await runRace(race, &plan, context)
            } onCancel: {
                race.cancelAll()
            }
            race.finish()
            return outcome
        } catch {
            race.cancelAll()
            throw error
        }
    }

    private func runRace(_ race: ConnectionRace, _ plan: inout AddressPlan, _ context: AttemptContext) async throws -> Outcome {
        var lastError: HTTPTransportError?
        var launched = 0
        var running = 0
        func launch(_ address: HTTPDNSIPAddress?) {
            let index = launched
            launched += 1
            running += 1
            // The gate only where another attempt may run alongside: a lone attempt (one address, or
            // racing off) needs no libcurl callback before its request.
            let gated = attemptDelay != nil && (plan.hasNext || running > 1)
            race.add(index, address: address, gated: gated)
            var transportRequest = makeTransportRequest(
                context.request, url: context.url, pinned: address, body: context.body, proxy: address == nil ? plan.proxy : nil,
                options: context.options)
            if gated { transportRequest.connectGate = { race.claim(index, $0) } }
            let attempt = AttemptDelegate(
                originalURL: context.url, interceptRedirects: context.interceptRedirects, client: context.delegate,
                report: context.report, request: context.request, cookieStorage: context.cookieStorage, started: context.started,
                responses: responses, ranking: address.map { (engine, $0) })
            // A redirect address that answers is remembered where its head arrives, before the caller
            // can see the response: the next request to the host must find it (sticky, seed 003).
            // The connector, not the client: an attempt raced past outlives the request, and must not
            // keep the client (whose release cancels it) alive.
            let redirectPlan = plan.redirect == nil ? nil : plan
            let connector = self.connector
            attempt.start(transport: transport, request: transportRequest) { race.register(index, $0) } onResult: { result in
                if let redirectPlan {
                    switch result {
                    case .delivered, .redirect: connector.connected(redirectPlan, at: address)
                    case .failed: break
                    }
                }
                race.finished(index, result)
            }
            if let delay = attemptDelay, address != nil, plan.hasNext {
                race.startTimer(index, delay: delay)
            }
        }

        guard let first = await connector.nextAddress(&plan, lastError: nil, report: context.report) else {
            if let error = plan.resolutionError { throw error }
            throw URLError(.cannotFindHost, userInfo: [NSLocalizedDescriptionKey: "No address was found for \(plan.host)."])
        }
        launch(first)
        for await event in race.events {
            try Task.checkCancellation()
            switch event {
            case .delayElapsed(let index):
                // Only the newest attempt's delay starts another, and only from the answer's own
                // addresses: fallbacks (LocalDNS, the block redirect) wait until everything failed.
                guard index == launched - 1, !race.hasWinner, let next = plan.next() else { continue }
                launch(next)
            case .finished(let index, let result):
                running -= 1
                let role = race.role(of: index)
                if role != .loser {
                    let error: HTTPTransportError
                    switch result {
                    case .delivered:
                        connector.connected(plan, at: race.address(of: index))
                        return .delivered
                    case .redirect(let next, let answer):
                        connector.connected(plan, at: race.address(of: index))
                        return .redirect(next, answer)
                    case .failed(let failure):
                        error = failure
                    }
                    try recordFailure(error, at: race.address(of: index), plan: plan, context: context)
                    lastError = error
                    if role == .winner { plan.requeue(race.reopen()) }
                    // RFC 8305 §5: a failure starts the next address of the answer at once.
                    if running > 0, !race.hasWinner, let next = plan.next() { launch(next) }
                }
                if running == 0 {
                    // Nothing in flight: the fallbacks, or the end.
                    guard let next = await connector.nextAddress(&plan, lastError: lastError, report: context.report) else {
                        throw lastError ?? HTTPTransportError(.cancelled, "cancelled", host: plan.host)
                    }
                    launch(next)
                }
            }
        }
        // The stream ended without an outcome: the race was cancelled.
        throw CancellationError()
    }

    /// Books a failed attempt at `address` (nil: unpinned, through libcurl's resolver or a proxy)
    /// and throws when the request must not go on elsewhere.
    private func recordFailure(_ error: HTTPTransportError, at address: HTTPDNSIPAddress?, plan: AddressPlan, context: AttemptContext) throws {
        if error.code == .cancelled, context.task.isCancelled { throw CancellationError() }
        context.report.withLock { $0.attempts.append(.init(address: address, failure: error.description)) }
        if let address, error.code != .cancelled { connector.connectFailed(address, error: error, plan: plan) }
        if error.code == .serverCertificateUntrusted || error.code == .secureConnectionFailed {
            // Fail closed: the address (maybe from a stale cache entry) is not the real host's.
            engine.invalidate(plan.host)
            throw error
        }
        guard HTTPDNSConnector.isConnectFailure(error) else { throw error }
        guard context.body.isReplayable(after: error) else { throw error }
    }

    static func milliseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        return seconds * 1000 + attoseconds / 1_000_000_000_000_000
    }

    /// The connection attempt delay in force (RFC 8305 §5: never below 10 ms), or nil for none.
    var attemptDelay: Duration? {
        configuration.connectionAttemptDelay.map { max($0, .milliseconds(10)) }
    }

}
