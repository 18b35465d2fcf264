import HTTPDNSCore
import XCTest

/// The per-address connect-time memory behind the engine's connect order.
final class HTTPDNSAddressRankingTests: XCTestCase {
    private let a = HTTPDNSIPAddress("192.0.2.1")!, b = HTTPDNSIPAddress("192.0.2.2")!, c = HTTPDNSIPAddress("2001:db8::3")!

    func testOrderIsFastestFirstWithUnknownAtTheGivenEstimate() {
        var ranking = HTTPDNSAddressRanking()
        XCTAssertEqual(ranking.ordered([a, b, c], unknown: .milliseconds(250), now: 0), [a, b, c], "nothing known: the given order")
        ranking.record(b, connectTime: .milliseconds(5), now: 0)
        ranking.recordUnfinished(a, after: .milliseconds(300), now: 0)
        XCTAssertEqual(ranking.ordered([a, b, c], unknown: .milliseconds(250), now: 1), [b, c, a])
        XCTAssertEqual(ranking.ordered([a, b, c], unknown: .milliseconds(400), now: 1), [b, a, c])
    }

    func testMeasurementsAreSmoothed() throws {
        var ranking = HTTPDNSAddressRanking()
        ranking.record(a, connectTime: .milliseconds(80), now: 0)
        ranking.record(a, connectTime: .milliseconds(0), now: 1)
        XCTAssertEqual(try XCTUnwrap(ranking.estimate(a, now: 1)), .milliseconds(70), "7/8 of the old plus 1/8 of the new")
    }

    func testAnUnfinishedAttemptOnlyRaisesTheEstimate() throws {
        var ranking = HTTPDNSAddressRanking()
        ranking.record(a, connectTime: .milliseconds(500), now: 0)
        ranking.recordUnfinished(a, after: .milliseconds(250), now: 1)
        XCTAssertEqual(try XCTUnwrap(ranking.estimate(a, now: 1)), .milliseconds(500))
        ranking.recordUnfinished(a, after: .seconds(1), now: 2)
        XCTAssertEqual(try XCTUnwrap(ranking.estimate(a, now: 2)), .seconds(1))
    }

    func testOldMeasurementsAreIgnored() {
        var ranking = HTTPDNSAddressRanking(maxAge: 600)
        ranking.recordUnfinished(a, after: .seconds(5), now: 0)
        XCTAssertNotNil(ranking.estimate(a, now: 600))
        XCTAssertNil(ranking.estimate(a, now: 601))
        XCTAssertEqual(ranking.ordered([a, b], unknown: .milliseconds(250), now: 601), [a, b])
        ranking.record(a, connectTime: .milliseconds(10), now: 700)
        XCTAssertEqual(ranking.estimate(a, now: 700), .milliseconds(10), "a fresh start, not smoothed with the old value")
    }

    func testCapacityEvictsTheLeastRecentlyMeasured() {
        var ranking = HTTPDNSAddressRanking(capacity: 2)
        ranking.record(a, connectTime: .milliseconds(1), now: 0)
        ranking.record(b, connectTime: .milliseconds(1), now: 1)
        ranking.record(a, connectTime: .milliseconds(1), now: 2)
        ranking.record(c, connectTime: .milliseconds(1), now: 3)
        XCTAssertEqual(ranking.count, 2)
        XCTAssertNil(ranking.estimate(b, now: 3))
        XCTAssertNotNil(ranking.estimate(a, now: 3))
        XCTAssertNotNil(ranking.estimate(c, now: 3))
        ranking.removeAll()
        XCTAssertEqual(ranking.count, 0)
    }
}
