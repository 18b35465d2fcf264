import Foundation

/// The order in which the stub tries its upstreams, and when it hedges: per upstream a smoothed
/// round-trip time and variation (RFC 6298 §2: α = 1/8, β = 1/4) and a failure score that decays,
/// per answer and with time.
///
/// The expected cost of asking an upstream is its smoothed RTT plus its failure score times
/// ``Configuration/failurePenalty``: a fast upstream that drops one request in five ranks behind a
/// slightly slower one that answers every time, a 500 ms-slow one behind both. An upstream that
/// failed is not asked first again until its score has decayed (half-life
/// ``Configuration/failureHalfLife``): then it is tried now and then, and comes back once it answers.
///
/// A value with an explicit `now` (seconds on a monotonic clock); the resolver keeps one behind a lock.
package struct DNSStubUpstreamRanking: Sendable {
    /// Tuning, each with its default.
    package struct Configuration: Sendable, Hashable {
        /// The RTT assumed of an upstream never measured: low, so that every upstream is measured
        /// early, and high enough that a measured fast one is preferred. Default 50 ms.
        package var initialRTT: Double = 0.050
        /// Least time before hedging (loopback RTTs are tens of microseconds). Default 5 ms.
        package var hedgeFloor: Double = 0.005
        /// Most time before hedging, whatever the upstream's history. Default 1 s.
        package var hedgeCap: Double = 1.0
        /// Seconds added to the cost per unit of failure score (a failure costs about a timeout). Default 2 s.
        package var failurePenalty: Double = 2.0
        /// Weight of the latest outcome in the failure score. Default 1/4 (RFC 6298's 1/8 would let
        /// an upstream dropping one request in five stay first).
        package var failureGain: Double = 0.25
        /// The failure score halves every this many seconds without news. Default 10 s.
        package var failureHalfLife: Double = 10

        package init() {}
    }

    /// What is known about one upstream.
    package struct Entry: Sendable, Hashable {
        /// Smoothed RTT in seconds (RFC 6298 SRTT); nil until measured.
        package var smoothedRTT: Double?
        /// RTT variation in seconds (RFC 6298 RTTVAR).
        package var rttVariation: Double = 0
        /// Failure score in [0, 1] as of ``updated``.
        package var failureScore: Double = 0
        /// When ``failureScore`` was last updated.
        package var updated: Double = 0
    }

    package let configuration: Configuration
    package private(set) var entries: [Entry]

    /// `count` upstreams, none measured.
    package init(count: Int, configuration: Configuration = Configuration()) {
        self.configuration = configuration
        entries = Array(repeating: Entry(), count: count)
    }

    /// The failure score of `index` decayed to `now`.
    package func failureScore(_ index: Int, now: Double) -> Double {
        let entry = entries[index]
        let age = max(0, now - entry.updated)
        return entry.failureScore * Self.pow2(-age / configuration.failureHalfLife)
    }

    /// Expected seconds to get an answer from `index`.
    package func cost(_ index: Int, now: Double) -> Double {
        (entries[index].smoothedRTT ?? configuration.initialRTT) + failureScore(index, now: now) * configuration.failurePenalty
    }

    /// The indices, cheapest first; equal costs keep the configured order.
    package func order(now: Double) -> [Int] {
        let costs = entries.indices.map { cost($0, now: now) }
        return entries.indices.sorted { costs[$0] < costs[$1] || (costs[$0] == costs[$1] && $0 < $1) }
    }

    /// How long to wait for `index` before asking the next one too: SRTT + 4·RTTVAR (RFC 6298's
    /// RTO without its 1 s floor), within ``Configuration/hedgeFloor`` and ``Configuration/hedgeCap``;
    /// twice the initial RTT when never measured.
    package func hedgeDelay(_ index: Int) -> Double {
        let entry = entries[index]
        let usual = entry.smoothedRTT.map { $0 + 4 * entry.rttVariation } ?? 2 * configuration.initialRTT
        return min(configuration.hedgeCap, max(configuration.hedgeFloor, usual))
    }

    /// An answer from `index` after `rtt` seconds (a SERVFAIL/REFUSED is a ``recordFailure(_:now:)``).
    package mutating func recordSuccess(_ index: Int, rtt: Double, now: Double) {
        sample(index, rtt: rtt)
        setScore(index, failureScore(index, now: now) * (1 - configuration.failureGain), now: now)
    }

    /// A timeout, an error, SERVFAIL or REFUSED from `index`, or a request abandoned after `elapsed`
    /// seconds because another upstream answered first: the elapsed time is a lower bound of its RTT
    /// and counts as a sample when it raises the estimate.
    package mutating func recordFailure(_ index: Int, elapsed: Double? = nil, now: Double) {
        if let elapsed, elapsed > (entries[index].smoothedRTT ?? 0) { sample(index, rtt: elapsed) }
        setScore(index, failureScore(index, now: now) * (1 - configuration.failureGain) + configuration.failureGain, now: now)
    }

    /// RFC 6298 §2.2 and §2.3.
    private mutating func sample(_ index: Int, rtt: Double) {
        let rtt = max(0, rtt)
        if let srtt = entries[index].smoothedRTT {
            entries[index].rttVariation = 0.75 * entries[index].rttVariation + 0.25 * abs(srtt - rtt)
            entries[index].smoothedRTT = 0.875 * srtt + 0.125 * rtt
        } else {
            entries[index].smoothedRTT = rtt
            entries[index].rttVariation = rtt / 2
        }
    }

    private mutating func setScore(_ index: Int, _ score: Double, now: Double) {
        entries[index].failureScore = min(1, max(0, score))
        entries[index].updated = now
    }

    /// 2^x, at most 1.
    static func pow2(_ exponent: Double) -> Double {
        exponent < 0 ? exp2(exponent) : 1
    }
}
