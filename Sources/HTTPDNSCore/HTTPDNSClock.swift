
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Wall-clock time in seconds since 1970, injectable so TTL behaviour is tested without sleeping.
///
/// Wall time rather than a monotonic clock because cache entries are persisted across runs.
public protocol HTTPDNSClock: Sendable {
    /// The current time in seconds since 1970-01-01 UTC.
    func now() -> Double
}

/// The real clock.
public struct HTTPDNSSystemClock: HTTPDNSClock {
    public init() {}

    public func now() -> Double {
        var spec = timespec()
        // The coarse clock (a few milliseconds of resolution) is plenty for TTLs counted in seconds,
        // and several times cheaper: this runs on every cache hit.
        #if os(Linux)
        clock_gettime(CLOCK_REALTIME_COARSE, &spec)
        #else
        clock_gettime(CLOCK_REALTIME, &spec)
        #endif
        return Double(spec.tv_sec) + Double(spec.tv_nsec) / 1e9
    }
}

/// Seconds since the clock was made, on the continuous monotonic clock: for what must not move
/// when the wall clock is stepped and is never persisted (the stub's caches and upstream ranking,
/// the report sharer's backoff). Injected where the wall clock would be, so that tests drive those
/// with ``HTTPDNSManualClock`` too.
package struct HTTPDNSUptimeClock: HTTPDNSClock {
    private let start = ContinuousClock.now

    package init() {}

    package func now() -> Double {
        (ContinuousClock.now - start).inSeconds
    }
}

/// A clock that moves only when told to; for tests.
package final class HTTPDNSManualClock: HTTPDNSClock {
    private let current: HTTPDNSLock<Double>

    /// Starts at `start` seconds since 1970 (default: 2026-01-01).
    package init(start: Double = 1_767_225_600) {
        current = HTTPDNSLock(start)
    }

    package func now() -> Double {
        current.withLock { $0 }
    }

    /// Moves the clock forward by `duration`.
    package func advance(by duration: Duration) {
        let (seconds, attoseconds) = duration.components
        advance(by: Double(seconds) + Double(attoseconds) / 1e18)
    }

    /// Moves the clock forward by `seconds` (the package's tests count in plain seconds).
    package func advance(by seconds: Double) {
        current.withLock { $0 += seconds }
    }
}

extension Duration {
    /// The duration in seconds, for the engine's clock arithmetic (``HTTPDNSClock`` counts seconds).
    package var inSeconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
