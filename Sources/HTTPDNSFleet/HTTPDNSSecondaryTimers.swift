import DNSWire

/// When a secondary asks its primary again, and whether its copy has expired (RFC 1035 §4.3.5,
/// RFC 1996 §4): a value with an explicit `now`, so the rules are tested without clocks.
///
/// - After a transfer or a check that found the zone up to date: the zone's SOA REFRESH later.
/// - After a failure: RETRY later (with no zone yet, ``initialRetry``).
/// - A zone not confirmed by the primary for its SOA EXPIRE since the last success has expired
///   (RFC 1035 §4.3.5): the service stops answering from it and `/ready` says so, until a primary
///   confirms it or sends a new one.
/// - A copy from disk starts as confirmed when its file says (``restored(_:confirmedAt:)``), and is
///   checked with the primary at once.
/// - A NOTIFY asks at once (``notified(now:)``), however long the timer would wait. One that comes
///   while an attempt is under way asks again as soon as that attempt succeeds: the attempt may have
///   read the zone before the change the NOTIFY announces (BIND keeps a "refresh again" flag for it).
///
/// Every interval is clamped to ``bounds`` so that a hostile or careless SOA (REFRESH 0, RETRY
/// 2^32 − 1) neither hammers the primary nor stops following it.
package struct HTTPDNSSecondaryTimers: Sendable, Hashable {
    /// The shortest and longest wait between two attempts, in seconds. Default 1...86,400.
    package var bounds: ClosedRange<Double> = 1...86_400
    /// The wait after a failure before any zone was loaded, in seconds. Default 10.
    package var initialRetry: Double = 10

    /// The SOA of the zone held; nil before the first transfer.
    package private(set) var soa: DNSSOA?
    /// When the primary last confirmed the zone (a transfer or an up-to-date check).
    package private(set) var confirmedAt: Double?
    /// When the next attempt is due.
    package private(set) var nextAttempt: Double = 0
    /// An attempt is under way (between ``attemptStarted()`` and its success or failure).
    private var attempting = false
    /// A NOTIFY came during the attempt under way.
    private var notifiedDuringAttempt = false

    package init() {}

    /// An attempt begins: it reads the primary's zone as it is from now on.
    package mutating func attemptStarted() {
        attempting = true
        notifiedDuringAttempt = false
    }

    /// A transfer gave `soa`'s zone, or the primary said the zone with `soa` is current: REFRESH
    /// later, or at once when a NOTIFY came during the attempt.
    package mutating func succeeded(_ soa: DNSSOA, now: Double) {
        self.soa = soa
        confirmedAt = now
        nextAttempt = notifiedDuringAttempt ? now : now + clamp(Double(soa.refresh))
        attempting = false
        notifiedDuringAttempt = false
    }

    /// A copy of the zone with `soa`, last confirmed at `confirmedAt` (earlier than now), was read
    /// back from disk: it expires as it would have, and the primary is asked at once.
    package mutating func restored(_ soa: DNSSOA, confirmedAt: Double) {
        self.soa = soa
        self.confirmedAt = confirmedAt
        nextAttempt = 0
    }

    /// An attempt failed: RETRY later, a NOTIFY during it or not (asking a failing primary again at
    /// once would only fail again).
    package mutating func failed(now: Double) {
        nextAttempt = now + clamp(soa.map { Double($0.retry) } ?? initialRetry)
        attempting = false
        notifiedDuringAttempt = false
    }

    /// The primary sent a NOTIFY: ask now, or right after the attempt under way.
    package mutating func notified(now: Double) {
        nextAttempt = min(nextAttempt, now)
        if attempting { notifiedDuringAttempt = true }
    }

    /// When the zone held expires unless confirmed again; nil before the first transfer.
    package var expiresAt: Double? {
        guard let soa, let confirmedAt else { return nil }
        return confirmedAt + Double(soa.expire)
    }

    /// Whether the zone held has gone unconfirmed for longer than its SOA EXPIRE.
    package func isExpired(now: Double) -> Bool {
        guard let expiresAt else { return false }
        return now > expiresAt
    }

    private func clamp(_ seconds: Double) -> Double { min(max(seconds, bounds.lowerBound), bounds.upperBound) }
}
