import HTTPDNSCore

extension HTTPDNSEngine {
    /// `addresses` in the order to connect: fastest remembered connect time first (see
    /// ``HTTPDNSAddressRanking``), addresses cooling down after a failure last.
    ///
    /// - Parameter unknown: the time an address never measured counts as.
    package func connectOrder(_ addresses: [HTTPDNSIPAddress], unknown: Duration) -> [HTTPDNSIPAddress] {
        guard addresses.count > 1 else { return addresses }
        let now = clock.now()
        return state.withLock { state in
            let ranked = state.ranking.ordered(addresses, unknown: unknown, now: now)
            guard !state.addressCooldown.isEmpty else { return ranked }
            return HTTPDNSEngine.coolingLast(ranked, cooldown: state.addressCooldown, now: now)
        }
    }

    /// A new connection to `address` took `time` (TCP connect, without TLS).
    ///
    /// Not a change of any answer, so the hit memos stay valid.
    package func recordConnectTime(_ address: HTTPDNSIPAddress, _ time: Duration) {
        let now = clock.now()
        state.withLock { $0.ranking.record(address, connectTime: time, now: now) }
    }

    /// A connection to `address` was still not made after `elapsed`, when another address won.
    package func recordUnfinishedConnect(_ address: HTTPDNSIPAddress, after elapsed: Duration) {
        let now = clock.now()
        state.withLock { $0.ranking.recordUnfinished(address, after: elapsed, now: now) }
    }

    /// The remembered connect time of `address`, or nil when none (or too old).
    package func connectTimeEstimate(_ address: HTTPDNSIPAddress) -> Duration? {
        let now = clock.now()
        return state.withLock { $0.ranking.estimate(address, now: now) }
    }

    /// Forgets every remembered connect time: they describe paths of a network the device may have
    /// left (for a network change).
    package func forgetConnectTimes() {
        state.withLock { $0.ranking.removeAll() }
    }
}
