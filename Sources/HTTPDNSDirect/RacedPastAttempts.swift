import HTTPDNSCore
import HTTPDNSTransport

/// The attempts connection races left behind still connecting, so that a process about to exit
/// (`httpdns fetch --report`) can let them come to their end first, and a released client stops them.
///
/// An address raced past is only slow so far. Its attempt keeps connecting, without a request,
/// until it connects (it is then closed unused) or fails; a failure (a blackholed address times out)
/// is booked like any failed address: the monitor, the cool-down, and the failure report that a
/// carrier's blocked origin is otherwise never reported by (issue 22).
package final class RacedPastAttempts: Sendable {
    private let running = HTTPDNSLock<[ObjectIdentifier: HTTPTransportTask]>([:])

    package init() {}

    /// Attempts still connecting after being raced past.
    package var count: Int { running.withLock { $0.count } }

    func started(_ transfer: HTTPTransportTask) {
        running.withLock { $0[ObjectIdentifier(transfer)] = transfer }
    }

    /// Forgets `transfer` (it ended); nothing happens for one never started here.
    func ended(_ transfer: HTTPTransportTask) {
        _ = running.withLock { $0.removeValue(forKey: ObjectIdentifier(transfer)) }
    }

    /// Cancels every attempt still connecting (their end is then not booked as a failure).
    func cancelAll() {
        let transfers = running.withLock { running in
            defer { running.removeAll() }
            return Array(running.values)
        }
        for transfer in transfers { transfer.cancel() }
    }

    /// Returns once no raced-past attempt is still connecting, or after `limit`.
    package func settle(within limit: Duration) async {
        let deadline = ContinuousClock.now + limit
        while count > 0, ContinuousClock.now < deadline, !Task.isCancelled {
            try? await Task.sleep(for: .milliseconds(20))
        }
    }
}
