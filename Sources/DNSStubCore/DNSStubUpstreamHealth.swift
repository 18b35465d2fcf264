/// Whether the stub's upstreams are known to be failing, as a plain value taking `now`.
///
/// RFC 8767 §5 lets a resolver answer stale data once a "client response timer" (1.8 s suggested)
/// runs out, and recommends a "failure recheck timer" so that a resolver that has just seen its
/// upstreams fail does not make every client wait for them again. This is that memory: after an
/// exchange fails (timeout, refused, unreachable) with every upstream, the upstreams count as down
/// for ``Configuration/downPeriod``; while they are down, a query that has a stale answer gets it
/// at once and the refresh goes on in the background (whose failures keep them down, whose answer
/// brings them back). A query with nothing stale still tries the upstreams, down or not.
package struct DNSStubUpstreamHealth: Sendable, Hashable {
    /// Timers, each with its default.
    package struct Configuration: Sendable, Hashable {
        /// How long the upstreams stay down after every one of them failed, seconds. Default 5
        /// (RFC 8767 §5 suggests a failure recheck timer of seconds, not minutes).
        package var downPeriod: Double = 5
        /// Longest a query with a stale answer waits for the upstreams while they are not known to
        /// be down (RFC 8767 §5 client response timer). Default 1.8 s.
        package var clientResponseTimer: Duration = .milliseconds(1800)

        package init() {}
    }

    package let configuration: Configuration
    /// Until when (the caller's clock) the upstreams count as down; nil when they are not.
    package private(set) var downUntil: Double?

    package init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
    }

    /// Whether the upstreams are known to be failing at `now`.
    package func isDown(now: Double) -> Bool {
        downUntil.map { now < $0 } ?? false
    }

    /// Every upstream failed one exchange at `now`: down for ``Configuration/downPeriod`` from now.
    package mutating func recordFailure(now: Double) {
        downUntil = now + configuration.downPeriod
    }

    /// An upstream answered: no longer down.
    package mutating func recordAnswer() {
        downUntil = nil
    }
}
