import HTTPDNSCore
import HTTPDNSTransport

extension ProxyConnectionStateMachine {
    /// The connector asks for a connect to `address`:`port` (its `number`-th address).
    mutating func attemptRequested(
        address: HTTPDNSIPAddress, port: UInt16, number: Int, deliver: @escaping Deliver, now: UInt64
    ) -> Action {
        guard case .connecting(let box) = state, box.connecting.attempt == nil else {
            return .release(Release(deliverGone: deliver))
        }
        return .connect(AttemptPlan(
            address: address, port: port, number: number, deadline: now + rules.connectTimeout, owner: .connector(deliver)))
    }

    /// The connection started (or could not start) the connect `plan` asked for.
    mutating func attemptStarted(_ plan: AttemptPlan, _ start: ConnectStart, now: UInt64) -> Action {
        guard case .connecting(let box) = state, box.connecting.attempt == nil else {
            // Not reachable (the plan was made in this turn); nobody waits for the socket.
            var release = Release(attempt: nil)
            if case .connector(let deliver) = plan.owner { release.deliverGone = deliver }
            switch start {
            case .inProgress(let upstream), .connected(let upstream): release.upstream = upstream
            case .failed(_, _, let socket): release.upstream = socket
            }
            return .release(release)
        }
        switch start {
        case .inProgress(let upstream):
            // In progress, the socket's first writable edge says when the handshake is over.
            box.connecting.attempt = Attempt(plan: plan, upstream: upstream)
            return .none
        case .connected(let upstream):
            return connected(Attempt(plan: plan, upstream: upstream), box.connecting)
        case .failed(let code, let detail, let socket):
            return attemptEnded(plan, code, detail, closing: socket, request: box.connecting.request, now: now)
        }
    }

    /// The attempt in flight failed (its socket's error, or the connect deadline).
    mutating func attemptFailed(_ code: HTTPTransportError.Code, _ detail: String, now: UInt64) -> Action {
        guard case .connecting(let box) = state, let attempt = box.connecting.attempt else { return .none }
        box.connecting.attempt = nil
        return attemptEnded(attempt.plan, code, detail, closing: attempt.upstream, request: box.connecting.request, now: now)
    }

    /// The connector found no address that connects: answer its status.
    mutating func connectorFailed(_ failure: ProxyConnector.Failure, now: UInt64) -> Action {
        guard case .connecting(let box) = state else { return .none }
        let target = box.connecting.request.target
        return respond(
            .tunnelFailed(host: target.host, port: target.port, status: failure.status, reason: failure.reason),
            status: failure.status, reason: failure.reason, drain: true, now: now, release: Release(attempt: box.connecting.attempt))
    }

    /// A failed attempt's socket goes; then the connector hears of it, or — for the fast path's own
    /// attempt — an IP literal is answered (nothing else to try for an address given as such) and a
    /// name goes to the connector, which cools the address down and tries it last.
    private mutating func attemptEnded(
        _ plan: AttemptPlan, _ code: HTTPTransportError.Code, _ detail: String, closing: Upstream?, request: Request, now: UInt64
    ) -> Action {
        let target = request.target
        let error = HTTPTransportError(code, detail, host: target.host, attemptedAddress: plan.address)
        switch plan.owner {
        case .connector(let deliver):
            return .deliver(deliver, .failed(error), closing: closing)
        case .fastPath where request.literal != nil:
            let status = code == .timedOut ? 504 : 502
            let reason = "\(plan.address.uriText): \(detail)"
            return respond(
                .tunnelFailed(host: target.host, port: target.port, status: status, reason: reason), status: status, reason: reason,
                drain: true, now: now, failedAddress: FailedAddress(address: plan.address, error: error), release: Release(upstream: closing))
        case .fastPath:
            return .startConnector(
                host: target.host, port: target.port, cooling: FailedAddress(address: plan.address, error: error), closing: closing)
        }
    }

    /// The upstream connected: relay, the client's and the upstream's edges so far handed to the pumps.
    mutating func connected(_ attempt: Attempt, _ connecting: Connecting) -> Action {
        let request = connecting.request
        let upstream = attempt.upstream.socket
        var toServer: ProxyPump
        var toClient: ProxyPump
        switch request.target {
        case .tunnel:
            toServer = ProxyPump(from: client, to: upstream, prefix: request.leftover, scanResponse: false)
            toClient = ProxyPump(from: upstream, to: client, prefix: ProxyReply.established, scanResponse: false)
        case .forward:
            toServer = ProxyPump(
                from: client, to: upstream, prefix: ProxyForwarding.upstreamHead(request.head) + request.leftover, scanResponse: false)
            toClient = ProxyPump(from: upstream, to: client, prefix: [], scanResponse: true)
        }
        toServer.sourceReadable = connecting.client.readable
        toServer.sourceHungUp = connecting.client.hungUp
        toClient.sourceReadable = attempt.readiness.readable
        toClient.sourceHungUp = attempt.readiness.hungUp
        state = .relaying(RelayingBox(Relaying(
            target: request.target, upstream: attempt.upstream, toServer: toServer, toClient: toClient,
            lastActivity: connecting.acceptedAt)))
        let opened = Opened(host: request.target.host, port: request.target.port, address: attempt.plan.address, attempts: attempt.plan.number)
        if case .connector(let deliver) = attempt.plan.owner { return .startRelay(opened, deliver) }
        return .startRelay(opened, nil)
    }
}
