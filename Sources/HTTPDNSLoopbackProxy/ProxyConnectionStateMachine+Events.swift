import HTTPDNSTransport

extension ProxyConnectionStateMachine {
    // MARK: - Socket events

    /// An edge from the client socket. While relaying, what it said goes to the pumps, `pump` runs
    /// them (the connection's I/O, see ``relay(now:client:upstream:_:)``) and the action is what
    /// follows: one call and one action per event on the hot path.
    mutating func clientEvent(_ edges: Edges, now: UInt64, pump: (inout ProxyPump, inout ProxyPump) -> Bool) -> Action {
        switch state {
        case .relaying(let box):
            return relay(box, now: now, client: edges, upstream: Edges(), pump)
        case .connecting(let box):
            // Nothing is read while connecting; only a failed or vanished client matters.
            if edges.readable { box.connecting.client.readable = true }
            if edges.hungUp { box.connecting.client.hungUp = true }
            return edges.failed ? closeAll() : .none
        case .readingHead:
            guard case .readingHead(var reading) = take() else { preconditionFailure("not reading the head") }
            if edges.readable { reading.client.readable = true }
            if edges.hungUp { reading.client.hungUp = true }
            state = .readingHead(reading)
            return .readHead
        case .draining:
            return .drain
        case .closed:
            return .none
        case .modifying:
            preconditionFailure("client event while the state machine modifies its state")
        }
    }

    /// An edge from the upstream socket: the attempt's while connecting; while relaying, as for
    /// ``clientEvent(_:now:pump:)``.
    mutating func upstreamEvent(_ edges: Edges, now: UInt64, pump: (inout ProxyPump, inout ProxyPump) -> Bool) -> Action {
        let box: ConnectingBox
        switch state {
        case .relaying(let relaying):
            return relay(relaying, now: now, client: Edges(), upstream: edges, pump)
        case .connecting(let connecting):
            box = connecting
        case .readingHead, .draining, .closed, .modifying:
            return .none
        }
        // Only an attempt in flight hears its socket.
        guard var attempt = box.connecting.attempt else { return .none }
        if edges.readable { attempt.readiness.readable = true }
        if edges.hungUp { attempt.readiness.hungUp = true }
        // Refused or unreachable: the socket's pending error says which.
        if edges.failed {
            box.connecting.attempt = attempt
            return .readConnectError(attempt.upstream.socket)
        }
        // Writable without an error: the handshake is done.
        guard edges.writable else {
            box.connecting.attempt = attempt
            return .none
        }
        box.connecting.attempt = nil
        return connected(attempt, box.connecting)
    }

    // MARK: - Deadlines

    /// The loop's periodic scan: the request head, the connect attempt, idleness, the drain after
    /// an answer, and — while the proxy drains — whether the connection has become idle (`unread`:
    /// see ``proxyDraining(now:unread:)``).
    mutating func checkDeadlines(now: UInt64, unread: (Int32) -> Bool = { _ in false }) -> Action {
        if stopping, isIdleForDrain(now: now, unread: unread) { return closeAll() }
        switch state {
        case .readingHead(let reading):
            guard now &- reading.acceptedAt > rules.headTimeout else { return .none }
            let reason = "no complete request head in time"
            return respond(.refused(status: 408, reason: reason), status: 408, reason: reason, drain: false, now: now)
        case .connecting(let box):
            guard let attempt = box.connecting.attempt, now > attempt.plan.deadline else { return .none }
            return attemptFailed(.timedOut, "connect timed out", now: now)
        case .relaying(let box):
            return now &- box.relaying.lastActivity > rules.idleTimeout ? closeAll() : .none
        case .draining(let draining):
            return now > draining.deadline ? closeAll() : .none
        case .closed:
            return .none
        case .modifying:
            preconditionFailure("deadline scan while the state machine modifies its state")
        }
    }

    // MARK: - Closing

    /// The client's socket ended or failed (a read found its end or an error).
    mutating func clientHungUp() -> Action {
        closeAll()
    }

    /// The answer went out in one write, without a drain (the head deadline's 408).
    mutating func replyFlushed() -> Action {
        closeAll()
    }

    /// The proxy stops (or the client could not be watched at all).
    mutating func proxyStopped() -> Action {
        closeAll()
    }

    /// Refused before it was admitted (too many connections): answered and closed by the loop.
    mutating func refusedAtAdmission() {
        state = .closed
    }

    /// Leaves every state for `closed`, with what that state held to let go of.
    mutating func closeAll() -> Action {
        let release: Release
        switch state {
        case .readingHead, .draining:
            release = Release()
        case .connecting(let box):
            release = Release(attempt: box.connecting.attempt)
        case .relaying(let box):
            release = Release(box.relaying)
        case .closed:
            return .none
        case .modifying:
            preconditionFailure("close while the state machine modifies its state")
        }
        state = .closed
        return .close(release)
    }

    /// Moves to `draining` with the answer `status` (`Connection: close`); with `drain`, the client's
    /// input is read and dropped for up to ``ProxyConnectionRules/drainTime``, so that closing does not
    /// reset the connection before the answer is read.
    mutating func respond(
        _ report: Report, status: Int, reason: String, drain: Bool, now: UInt64,
        failedAddress: FailedAddress? = nil, rewatchClient: Bool = false, release: Release = Release()
    ) -> Action {
        let deadline = now + (drain ? ProxyConnectionRules.drainTime : 0)
        state = .draining(Draining(reply: ProxyReply.bytes(status: status, reason: reason), deadline: deadline))
        return .respond(Response(
            status: status, drain: drain, report: report, failedAddress: failedAddress, rewatchClient: rewatchClient,
            release: release))
    }
}
