extension ProxyConnectionStateMachine {
    // MARK: - Relaying

    /// Hands what an edge said (`client`, `upstream`) to the pumps and runs them in place (`pump` is
    /// the connection's I/O: it moves what the edges seen allow and returns whether any byte moved),
    /// then decides: close when both directions are over (a forwarded request: when the response
    /// is), close on a failure, answer 502 for an unreadable response of which nothing reached the
    /// client yet, otherwise watch each socket for what its pump needs.
    mutating func relay(
        now: UInt64, client: Edges = Edges(), upstream: Edges = Edges(), _ pump: (inout ProxyPump, inout ProxyPump) -> Bool
    ) -> Action {
        guard case .relaying(let box) = state else { return .none }
        return relay(box, now: now, client: client, upstream: upstream, pump)
    }

    /// ``relay(now:client:upstream:_:)`` on the relaying state's box.
    mutating func relay(
        _ box: RelayingBox, now: UInt64, client: Edges, upstream: Edges, _ pump: (inout ProxyPump, inout ProxyPump) -> Bool
    ) -> Action {
        switch Self.step(&box.relaying, now: now, client: client, upstream: upstream, pump) {
        case .running(let action):
            return action
        case .over:
            state = .closed
            return .close(Release(box.relaying))
        case .unreadableResponse:
            let target = box.relaying.target
            let reason = "bad response from \(target.host)"
            return respond(
                .tunnelFailed(host: target.host, port: target.port, status: 502, reason: reason), status: 502, reason: reason,
                drain: true, now: now, rewatchClient: box.relaying.clientInterest != .all, release: Release(box.relaying))
        }
    }

    /// How a relay step ended.
    private enum Step {
        /// Go on, after this action (nothing, or a change of what the sockets are watched for).
        case running(Action)
        /// Both directions are over, or one failed.
        case over
        /// A forwarded response could not be read, and nothing of it reached the client yet.
        case unreadableResponse
    }

    /// The relay's logic on its state, changed in place.
    private static func step(
        _ relaying: inout Relaying, now: UInt64, client: Edges, upstream: Edges, _ pump: (inout ProxyPump, inout ProxyPump) -> Bool
    ) -> Step {
        if client.readable { relaying.toServer.sourceReadable = true }
        if client.hungUp { relaying.toServer.sourceHungUp = true }
        if client.writable { relaying.toClient.destinationWritable = true }
        if upstream.readable { relaying.toClient.sourceReadable = true }
        if upstream.hungUp { relaying.toClient.sourceHungUp = true }
        if upstream.writable { relaying.toServer.destinationWritable = true }
        if pump(&relaying.toServer, &relaying.toClient) { relaying.lastActivity = now }
        if relaying.toClient.failure != nil || relaying.toServer.failure != nil {
            return relaying.toClient.badResponse && relaying.toClient.moved == 0 ? .unreadableResponse : .over
        }
        if relaying.toClient.finished, relaying.toServer.finished || relaying.forwarding { return .over }
        // A socket whose bytes wait for the other side is not watched for reading until they move.
        let client: Interest = relaying.toServer.waitsForDestination ? .writeOnly : .all
        let upstream: Interest = relaying.toClient.waitsForDestination ? .writeOnly : .all
        let clientChanged = client != relaying.clientInterest
        let upstreamChanged = upstream != relaying.upstreamInterest
        relaying.clientInterest = client
        relaying.upstreamInterest = upstream
        guard clientChanged || upstreamChanged else { return .running(.none) }
        return .running(.watch(client: clientChanged ? client : nil, upstream: upstreamChanged ? (relaying.upstream, upstream) : nil))
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
