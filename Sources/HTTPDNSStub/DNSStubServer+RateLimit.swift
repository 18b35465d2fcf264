import DNSStubCore
import HTTPDNSCore

extension DNSStubServer {
    /// The rate limiter's clock starts here (a monotonic clock: wall-clock steps must not refill buckets).
    private static let rateEpoch = ContinuousClock.now

    /// `action` once the client's rate limit (``Configuration/rateLimit``) has had its say: a query
    /// over the limit becomes a drop, an empty TC=1 answer (UDP, every ``DNSStubRateLimiter/Configuration/slip``-th)
    /// or REFUSED (TCP); anything but a query to resolve passes through. Drops are counted here,
    /// replies by the caller as every front reply is.
    func rateLimited(_ action: DNSStubFront.Action, client: HTTPDNSIPAddress) -> DNSStubFront.Action {
        guard case .resolve(let request) = action, configuration.rateLimit.queriesPerSecond(for: client) > 0 else { return action }
        let elapsed = ContinuousClock.now - Self.rateEpoch
        let now = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) * 1e-18
        let decision = rateLimiter.withLock { $0.admit(client, transport: request.transport, now: now) }
        let reason = DNSStubRequestError(.rateLimited, "client over --rate-limit")
        switch decision {
        case .answer:
            return action
        case .slip:
            return .reply(front.encode(DNSStubResponse(isTruncated: true), for: request), reason: reason)
        case .drop where request.transport == .tcp:
            return .reply(DNSStubRejection(reason, request: request).encode(maxUDPPayloadSize: front.configuration.maxUDPPayloadSize), reason: reason)
        case .drop:
            resolver.frontReplied(.udp, reason)
            return .drop(reason)
        }
    }
}
