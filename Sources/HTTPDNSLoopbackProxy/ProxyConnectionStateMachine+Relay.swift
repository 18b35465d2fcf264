extension ProxyConnectionStateMachine {
    // MARK: - Relaying

    /// Runs the pumps in place (`pump` is the connection's I/O: it moves what the edges seen allow and
    /// returns whether any byte moved), then decides: close when both directions are over (a forwarded
    /// request: when the response is), close on a failure, answer 502 for an unreadable response
    /// of which nothing reached the client yet, otherwise watch each socket for what its pump needs.
    mutating func relay(now: UInt64, _ pump: (inout Pump, inout Pump) -> Bool) -> Action {
        guard case .relaying(var relaying) = state else { return .none }
        state = .modifying
        if pump(&relaying.toServer, &relaying.toClient) { relaying.lastActivity = now }
        if relaying.toClient.failure != nil || relaying.toServer.failure != nil {
            let release = Release(relaying)
            guard relaying.toClient.badResponse, relaying.toClient.moved == 0 else {
                state = .closed
                return .close(release)
            }
            let (host, port) = (relaying.target.host, relaying.target.port)
            let reason = "bad response from \(host)"
            return respond(
                .tunnelFailed(host: host, port: port, status: 502, reason: reason), status: 502, reason: reason, drain: true, now: now,
                rewatchClient: relaying.clientInterest != .all, release: release)
        }
        if relaying.toClient.finished, relaying.toServer.finished || relaying.forwarding {
            state = .closed
            return .close(Release(relaying))
        }
        // A socket whose bytes wait for the other side is not watched for reading until they move.
        let client: Interest = relaying.toServer.waitsForDestination ? .writeOnly : .all
        let upstream: Interest = relaying.toClient.waitsForDestination ? .writeOnly : .all
        let clientChanged = client != relaying.clientInterest
        let upstreamChanged = upstream != relaying.upstreamInterest
        relaying.clientInterest = client
        relaying.upstreamInterest = upstream
        let socket = relaying.upstream
        state = .relaying(relaying)
        guard clientChanged || upstreamChanged else { return .none }
        return .watch(client: clientChanged ? client : nil, upstream: upstreamChanged ? (socket, upstream) : nil)
    }

    // MARK: - Draining

    /// The part of the answer not sent yet, while draining.
    var unsentReply: ArraySlice<UInt8>? {
        guard case .draining(let draining) = state, draining.sent < draining.reply.count else { return nil }
        return draining.reply[draining.sent...]
    }

    /// `count` more bytes of the answer went out.
    mutating func replySent(_ count: Int) {
        guard case .draining(var draining) = state else { return }
        draining.sent = min(draining.reply.count, draining.sent + count)
        state = .draining(draining)
    }
}
