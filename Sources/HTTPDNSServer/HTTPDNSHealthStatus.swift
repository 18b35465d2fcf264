/// The health of one address and check, as a value: probe results go in with their time, up or
/// down comes out.
///
/// It starts **up**: an address not yet probed (just started, just added by a reload) is answered as
/// it would be without a check. Starting down would empty every checked name at each start and
/// reload until the first probes finish, and fail-open would then answer them all anyway; starting up
/// means a dead origin is answered for at most `fall` probes after a start, as before checks existed.
///
/// Up → down after ``HTTPDNSHealthCheck/fall`` failed probes in a row; down → up after
/// ``HTTPDNSHealthCheck/rise`` good probes in a row. A result that agrees with the state resets the
/// count of the other kind.
package struct HTTPDNSHealthStatus: Sendable, Hashable {
    /// The outcome of one probe, as the state machine and the status endpoint see it.
    package struct Result: Sendable, Hashable {
        /// Whether the probe passed.
        package var passed: Bool
        /// Why it failed (short, for people), nil when it passed.
        package var error: String?
        /// The HTTP status an `http`/`https` probe received, when it got that far.
        package var status: Int?
        /// When the probe ended.
        package var at: ContinuousClock.Instant

        package init(passed: Bool, error: String? = nil, status: Int? = nil, at: ContinuousClock.Instant) {
            self.passed = passed
            self.error = error
            self.status = status
            self.at = at
        }
    }

    package let rise: Int
    package let fall: Int
    /// Whether the address is answered.
    package private(set) var isUp = true
    /// Results in a row that disagree with ``isUp`` (failures while up, passes while down).
    package private(set) var streak = 0
    /// Since when ``isUp`` has held (the start, for an address never changed).
    package private(set) var since: ContinuousClock.Instant
    /// The last probe's result; nil before the first.
    package private(set) var last: Result?
    /// Probes recorded, and how many failed.
    package private(set) var probes = 0
    package private(set) var failures = 0

    package init(check: HTTPDNSHealthCheck, now: ContinuousClock.Instant) {
        self.rise = check.rise
        self.fall = check.fall
        self.since = now
    }

    /// Records one probe's result; returns true when it changed ``isUp``.
    @discardableResult
    package mutating func record(_ result: Result) -> Bool {
        probes += 1
        if !result.passed { failures += 1 }
        last = result
        guard result.passed != isUp else {
            streak = 0
            return false
        }
        streak += 1
        guard streak >= (isUp ? fall : rise) else { return false }
        isUp.toggle()
        streak = 0
        since = result.at
        return true
    }
}
