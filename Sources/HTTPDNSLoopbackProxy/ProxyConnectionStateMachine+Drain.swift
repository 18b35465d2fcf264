extension ProxyConnectionStateMachine {
    // MARK: - The proxy's drain

    /// The proxy drains (``HTTPDNSProxy/stop(drain:)``; not the `draining` state, which is an answer
    /// to a refused request going out): a connection with nothing in flight closes now; any other
    /// is marked ``stopping`` and closes as soon as its exchange is over, found by the deadline scan
    /// (``checkDeadlines(now:unread:)``) or, for a forwarded request, by the relay as always. The loop cuts
    /// whatever is left at the drain's timeout.
    ///
    /// What "nothing in flight" means in each state, and why:
    /// - `readingHead`: a client connects to send a request, which may be on its way: read on. One
    ///   that has sent no byte for ``ProxyConnectionRules/drainQuietTime`` since its connect (a
    ///   pre-connect that may never send) is idle.
    /// - `connecting`: the request was read: connect and relay it.
    /// - `relaying` a forwarded request: its response goes out in full, then the relay closes (one
    ///   request per connection, `Connection: close` both ways).
    /// - `relaying` a tunnel: the proxy cannot see the messages inside (TLS), so a tunnel is idle when
    ///   its pumps hold no byte and none moved either way for ``ProxyConnectionRules/drainQuietTime``:
    ///   an answer in progress moves bytes, and a request sent on a kept-alive tunnel arrives within it.
    /// - `draining`: the answer goes out as before and the state ends within ``ProxyConnectionRules/drainTime``.
    /// - `closed`: nothing to do.
    ///
    /// A connection quiet by the loop's clock is idle only if `unread` finds no byte waiting on its
    /// sockets either: the loop's `now` is taken when its wait returns, so bytes that came while it
    /// handled that batch (a request on a kept-alive tunnel, the first bytes of an answer) are not
    /// in it yet, and the loop may have been held up past the quiet time meanwhile. Their edge is
    /// in the next batch; closing now would cut a request already sent.
    mutating func proxyDraining(now: UInt64, unread: (Int32) -> Bool = { _ in false }) -> Action {
        switch state {
        case .closed:
            return .none
        case .modifying:
            preconditionFailure("drain while the state machine modifies its state")
        case .readingHead, .connecting, .relaying, .draining:
            stopping = true
            return isIdleForDrain(now: now, unread: unread) ? closeAll() : .none
        }
    }

    /// Whether the connection has nothing in flight (see ``proxyDraining(now:unread:)``); `unread`
    /// is asked last, of a socket, only when everything else says idle.
    func isIdleForDrain(now: UInt64, unread: (Int32) -> Bool) -> Bool {
        switch state {
        case .readingHead(let reading):
            return reading.buffered.isEmpty && !reading.client.readable && now &- reading.acceptedAt >= rules.drainQuietTime
                && !unread(client)
        case .relaying(let box):
            let relaying = box.relaying
            return !relaying.forwarding && !relaying.toServer.holdsBytes && !relaying.toClient.holdsBytes
                && now &- relaying.lastActivity >= rules.drainQuietTime
                && !unread(client) && !unread(relaying.upstream.socket)
        case .connecting, .draining, .closed, .modifying:
            return false
        }
    }
}
