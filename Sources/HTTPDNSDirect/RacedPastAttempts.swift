import HTTPDNSCore

/// Counts the attempts a connection race left behind still connecting, so that a process about to
/// exit (`httpdns fetch --report`) can let them come to their end first.
///
/// An address raced past is only slow so far. Its attempt keeps connecting, without a request,
/// until it connects (it is then closed unused) or fails; a failure (a blackholed address times out)
/// is booked like any failed address: the monitor, the cool-down, and the failure report that a
/// carrier's blocked origin is otherwise never reported by (issue 22).
package final class RacedPastAttempts: Sendable {
    private let running = HTTPDNSLock(0)

    package init() {}

    /// Attempts still connecting after being raced past.
    package var count: Int { running.withLock { $0 } }

    func started() {
        running.withLock { $0 += 1 }
    }

    func ended() {
        running.withLock { $0 -= 1 }
    }

    /// Returns once no raced-past attempt is still connecting, or after `limit`.
    package func settle(within limit: Duration) async {
        let deadline = ContinuousClock.now + limit
        while count > 0, ContinuousClock.now < deadline, !Task.isCancelled {
            try? await Task.sleep(for: .milliseconds(20))
        }
    }
}
