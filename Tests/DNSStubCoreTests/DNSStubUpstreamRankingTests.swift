import DNSStubCore
import HTTPDNSCore
import XCTest

/// The upstream ranking with an explicit `now`: RFC 6298 smoothing, slow and dropping upstreams
/// falling behind, recovery, hedge delays. No sockets, no sleeping.
final class DNSStubUpstreamRankingTests: XCTestCase {
    func testUnmeasuredKeepTheConfiguredOrder() {
        let ranking = DNSStubUpstreamRanking(count: 3)
        XCTAssertEqual(ranking.order(now: 0), [0, 1, 2])
        XCTAssertEqual(ranking.hedgeDelay(0), 2 * ranking.configuration.initialRTT, accuracy: 1e-9)
    }

    func testSmoothingFollowsRFC6298() {
        var ranking = DNSStubUpstreamRanking(count: 1)
        ranking.recordSuccess(0, rtt: 0.100, now: 0)
        XCTAssertEqual(ranking.entries[0].smoothedRTT ?? 0, 0.100, accuracy: 1e-9)
        XCTAssertEqual(ranking.entries[0].rttVariation, 0.050, accuracy: 1e-9)
        ranking.recordSuccess(0, rtt: 0.200, now: 1)
        // RTTVAR = 3/4·0.05 + 1/4·|0.1 − 0.2|; SRTT = 7/8·0.1 + 1/8·0.2.
        XCTAssertEqual(ranking.entries[0].rttVariation, 0.0625, accuracy: 1e-9)
        XCTAssertEqual(ranking.entries[0].smoothedRTT ?? 0, 0.1125, accuracy: 1e-9)
        XCTAssertEqual(ranking.hedgeDelay(0), 0.1125 + 4 * 0.0625, accuracy: 1e-9)
    }

    func testHedgeDelayHasAFloorAndACap() {
        var ranking = DNSStubUpstreamRanking(count: 2)
        ranking.recordSuccess(0, rtt: 0.000_05, now: 0)
        ranking.recordSuccess(1, rtt: 9, now: 0)
        XCTAssertEqual(ranking.hedgeDelay(0), ranking.configuration.hedgeFloor)
        XCTAssertEqual(ranking.hedgeDelay(1), ranking.configuration.hedgeCap)
    }

    func testA500msSlowUpstreamFallsBehind() {
        var ranking = DNSStubUpstreamRanking(count: 3)
        var now = 0.0
        for _ in 0..<20 {
            now += 0.01
            ranking.recordSuccess(0, rtt: 0.501, now: now)
            ranking.recordSuccess(1, rtt: 0.002, now: now)
            ranking.recordSuccess(2, rtt: 0.001, now: now)
        }
        XCTAssertEqual(ranking.order(now: now), [2, 1, 0])
    }

    /// The slow one is only ever abandoned (the hedge answers first): its lower bounds push it back.
    func testAnUpstreamAlwaysLosingTheRaceFallsBehind() {
        var ranking = DNSStubUpstreamRanking(count: 2)
        ranking.recordFailure(0, elapsed: ranking.hedgeDelay(0) + 0.001, now: 0.1)
        ranking.recordSuccess(1, rtt: 0.001, now: 0.1)
        XCTAssertEqual(ranking.order(now: 0.1), [1, 0])
        XCTAssertGreaterThan(ranking.entries[0].smoothedRTT ?? 0, 0.1)
    }

    func testA20PercentDroppingUpstreamIsPenalised() {
        var ranking = DNSStubUpstreamRanking(count: 2)
        var now = 0.0
        // Upstream 0 is the faster when it answers, but one request in five gets no answer.
        for step in 0..<50 {
            now += 0.01
            if step % 5 == 4 {
                ranking.recordFailure(0, elapsed: ranking.hedgeDelay(0), now: now)
            } else {
                ranking.recordSuccess(0, rtt: 0.001, now: now)
            }
            ranking.recordSuccess(1, rtt: 0.003, now: now)
        }
        XCTAssertEqual(ranking.order(now: now).first, 1, "the reliable one first")
        XCTAssertGreaterThan(ranking.failureScore(0, now: now), 0.1)
        XCTAssertEqual(ranking.failureScore(1, now: now), 0)
    }

    func testAFailedUpstreamIsRetriedLaterAndComesBack() {
        var ranking = DNSStubUpstreamRanking(count: 2)
        ranking.recordSuccess(0, rtt: 0.001, now: 0)
        ranking.recordSuccess(1, rtt: 0.004, now: 0)
        for _ in 0..<3 { ranking.recordFailure(0, now: 1) }
        XCTAssertEqual(ranking.order(now: 1), [1, 0], "failed: behind")
        XCTAssertEqual(ranking.order(now: 5), [1, 0], "still behind a few seconds later")
        // Untouched, its score halves every 10 s: after a couple of minutes it is asked first again.
        let later = 1 + 12 * ranking.configuration.failureHalfLife
        XCTAssertEqual(ranking.order(now: later), [0, 1], "tried again")
        ranking.recordSuccess(0, rtt: 0.001, now: later)
        XCTAssertEqual(ranking.order(now: later), [0, 1], "answered: stays first")
        XCTAssertLessThan(ranking.failureScore(0, now: later), 0.01)
    }
}
