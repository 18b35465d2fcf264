extension ProxyConnectionStateMachine {
    // MARK: - Relaying

    /// Hands what an edge said (`client`, `upstream`) to the pumps and runs them in place (`pump` is
    /// the connection's I/O: it moves what the edges seen allow and returns whether any byte moved),
    /// then decides: close when both directions are over (a forwarded request: when the response
    /// is), close on a failure, answer 502 for an unreadable response of which nothing reached the
    /// client yet, otherwise watch each socket for what its pump needs.
    ///
    /// One call per edge, so that the relay state is moved out and back once per event.
    mutating func relay(
        now: UInt64, client: Edges = Edges(), upstream: Edges = Edges(), _ pump: (inout ProxyPump, inout ProxyPump) -> Bool
    ) -> Action {
        guard case .relaying = state, case .relaying(var relaying) = take() else { return .none }
        if client.readable { relaying.toServer.sourceReadable = true }
        if client.hungUp { relaying.toServer.sourceHungUp = true }
        if client.writable { relaying.toClient.destinationWritable = true }
        if upstream.readable { relaying.toClient.sourceReadable = true }
        if upstream.hungUp { relaying.toClient.sourceHungUp = true }
        if upstream.writable { relaying.toServer.destinationWritable = true }
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
        let action: Action = clientChanged || upstreamChanged
            ? .watch(client: clientChanged ? client : nil, upstream: upstreamChanged ? (relaying.upstream, upstream) : nil) : .none
        relaying.clientInterest = client
        relaying.upstreamInterest = upstream
        state = .relaying(relaying)
        return action
    }

    // MARK: - Draining

    /// The part of the answer not sent yet, while draining.
    var unsentReply: ArraySlice<UInt8>? {
        guard case .draining(let draining) = state, draining.sent < draining.reply.count else { return nil }
        return draining.reply[draining.sent...]
    }

    /// `count` more bytes of the answer went out.
    mutating func replySent(_ count: Int) {
        guard case .draining = state, case .draining(var draining) = take() else { return }
        draining.sent = min(draining.reply.count, draining.sent + count)
        state = .draining(draining)
    }
}
