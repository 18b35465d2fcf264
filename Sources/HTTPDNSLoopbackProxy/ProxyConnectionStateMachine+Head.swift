import HTTPDNSCore

extension ProxyConnectionStateMachine {
    /// How many bytes the next read of the request head may take (never past the head's size limit
    /// plus one, so that an oversized head is seen), or nil when no read is due: not reading the head,
    /// or the client's socket was found drained.
    func headRoom(scratch: Int) -> Int? {
        guard case .readingHead(let reading) = state, reading.client.readable else { return nil }
        return min(ProxyRequestHead.maximumBytes + 1 - reading.buffered.count, scratch)
    }

    /// A read of the request head would block: wait for the client's next edge.
    mutating func headDrained() {
        guard case .readingHead = state, case .readingHead(var reading) = take() else { return }
        reading.client.readable = false
        state = .readingHead(reading)
    }

    /// Bytes of the request head were read (`short`: fewer than asked for).
    ///
    /// A complete head is authorised here: the credential, then the target policy for an IP literal,
    /// then the fast path — an IP literal, or `cachedAddress`'s fresh cached answer for a name, is
    /// connected at once; any other name goes to the connector task.
    ///
    /// - Parameter cachedAddress: the fast path's address for a name, if the engine has one now.
    mutating func headBytesRead(
        _ bytes: UnsafeRawBufferPointer, short: Bool, now: UInt64,
        cachedAddress: (ProxyRequestHead.Target) -> HTTPDNSIPAddress?
    ) -> Action {
        guard case .readingHead = state, case .readingHead(var reading) = take() else { return .none }
        // A short read drained the socket (unless the client closed: then read on to the end).
        if short, !reading.client.hungUp { reading.client.readable = false }
        let parsed: Result<ProxyRequestHead.Parse, ProxyHeadError>
        var leftover: [UInt8] = []
        if reading.buffered.isEmpty {
            // The usual case: the whole head in one read, parsed where it lies.
            parsed = Self.parse(bytes)
            switch parsed {
            case .success(.incomplete): reading.buffered = Array(bytes)
            case .success(.complete(_, let length)) where length < bytes.count: leftover = Array(bytes[length...])
            default: break
            }
        } else {
            reading.buffered += bytes
            parsed = reading.buffered.withUnsafeBytes { Self.parse($0) }
            if case .success(.complete(_, let length)) = parsed, length < reading.buffered.count {
                leftover = Array(reading.buffered[length...])
            }
        }
        switch consume parsed {
        case .failure(let error):
            return respond(.refused(status: error.status, reason: error.description), status: error.status, reason: error.detail, drain: true, now: now)
        case .success(.incomplete):
            state = .readingHead(reading)
            return .none
        case .success(.complete(let head, _)):
            return headComplete(head, leftover: leftover, reading: reading, now: now, cachedAddress: cachedAddress)
        }
    }

    private mutating func headComplete(
        _ head: ProxyRequestHead, leftover: [UInt8], reading: ReadingHead, now: UInt64,
        cachedAddress: (ProxyRequestHead.Target) -> HTTPDNSIPAddress?
    ) -> Action {
        guard rules.authorizes(head) else {
            return respond(
                .refused(status: 407, reason: "missing or wrong proxy credential"), status: 407, reason: "proxy credential required",
                drain: true, now: now)
        }
        let target = head.target
        let literal = HTTPDNSIPAddress(target.host)
        if let literal, !rules.policy.allows(literal, port: target.port) {
            let reason = "target forbidden by the proxy's policy"
            return respond(
                .tunnelFailed(host: target.host, port: target.port, status: 403, reason: reason), status: 403, reason: reason,
                drain: true, now: now)
        }
        state = .connecting(ConnectingBox(Connecting(
            request: Request(head: head, leftover: leftover, literal: literal), acceptedAt: reading.acceptedAt,
            client: reading.client, attempt: nil)))
        guard let address = literal ?? cachedAddress(target) else {
            return .startConnector(host: target.host, port: target.port, cooling: nil, closing: nil)
        }
        return .connect(AttemptPlan(address: address, port: target.port, number: 1, deadline: now + rules.connectTimeout, owner: .fastPath))
    }

    private static func parse(_ bytes: UnsafeRawBufferPointer) -> Result<ProxyRequestHead.Parse, ProxyHeadError> {
        Result { () throws(ProxyHeadError) -> ProxyRequestHead.Parse in try ProxyRequestHead.parse(contiguous: bytes) }
    }
}
