import HTTPDNSCore
import HTTPDNSServer
import XCTest

/// From reports to decisions (``HTTPDNSReportDecisions``): when to probe, down for all vs demoted in
/// one view, hold times, fail open, and the bound on decisions.
final class HTTPDNSReportDecisionsTests: XCTestCase {
    let first = HTTPDNSIPAddress("192.0.2.1")!
    let second = HTTPDNSIPAddress("192.0.2.2")!
    let third = HTTPDNSIPAddress("192.0.2.3")!

    private func key(_ address: HTTPDNSIPAddress, _ view: String) -> HTTPDNSReportAggregator.Key {
        .init(address: address, view: view)
    }

    func testAProbeIsCalledForAtTheThresholdOncePerAddress() {
        var decisions = HTTPDNSReportDecisions(hold: 600)
        XCTAssertFalse(decisions.needsProbe(key(first, "a"), networks: 2, threshold: 3, now: 0))
        XCTAssertTrue(decisions.needsProbe(key(first, "a"), networks: 3, threshold: 3, now: 0))
        decisions.probeStarted(first)
        // In flight: neither this view nor another starts a second probe of the address.
        XCTAssertFalse(decisions.needsProbe(key(first, "a"), networks: 4, threshold: 3, now: 1))
        XCTAssertFalse(decisions.needsProbe(key(first, "b"), networks: 9, threshold: 3, now: 1))
        XCTAssertTrue(decisions.needsProbe(key(second, "a"), networks: 3, threshold: 3, now: 1))
    }

    func testAFailedProbeTakesTheAddressOutOfEveryViewForTheHoldTime() {
        var decisions = HTTPDNSReportDecisions(hold: 600)
        decisions.probeStarted(first)
        let made = decisions.probeFinished(first, reachable: false, views: [("a", 3)], host: "www.example.test", port: 443, now: 100)
        XCTAssertEqual(made.map(\.kind), [.down])
        XCTAssertNil(made.first?.view)
        XCTAssertEqual(decisions.order([first, second, third], view: "a", now: 200), [second, third])
        XCTAssertEqual(decisions.order([first, second, third], view: "b", now: 200), [second, third])
        XCTAssertFalse(decisions.needsProbe(key(first, "a"), networks: 5, threshold: 3, now: 200))
        // Fail open: when every address is down, all are answered.
        XCTAssertEqual(decisions.order([first], view: "a", now: 200), [first])
        // The hold ends at 700.
        XCTAssertEqual(decisions.order([first, second], view: "a", now: 700), [first, second])
        XCTAssertTrue(decisions.needsProbe(key(first, "a"), networks: 3, threshold: 3, now: 700))
    }

    func testAPassingProbeDemotesTheReportingViewsOnly() {
        var decisions = HTTPDNSReportDecisions(hold: 600)
        decisions.probeStarted(first)
        let made = decisions.probeFinished(first, reachable: true, views: [("carrier-a", 4)], host: "www.example.test", port: 443, now: 100)
        XCTAssertEqual(made.map(\.kind), [.demoted])
        XCTAssertEqual(made.first?.view, "carrier-a")
        XCTAssertEqual(made.first?.networks, 4)
        // That view's answers stop leading with it, and still carry it; another view is unchanged.
        XCTAssertEqual(decisions.order([first, second, third], view: "carrier-a", now: 200), [second, third, first])
        XCTAssertEqual(decisions.order([first], view: "carrier-a", now: 200), [first])
        XCTAssertEqual(decisions.order([first, second, third], view: "carrier-b", now: 200), [first, second, third])
        XCTAssertTrue(decisions.isDemoted(first, view: "carrier-a", now: 699))
        XCTAssertFalse(decisions.isDemoted(first, view: "carrier-a", now: 700))
        // While demoted, no new probe for that view; another view past the threshold gets one.
        XCTAssertFalse(decisions.needsProbe(key(first, "carrier-a"), networks: 9, threshold: 3, now: 200))
        XCTAssertTrue(decisions.needsProbe(key(first, "carrier-b"), networks: 3, threshold: 3, now: 200))
        XCTAssertEqual(decisions.inForce(now: 200).count, 1)
        XCTAssertEqual(decisions.inForce(now: 700).count, 0)
    }

    func testDecisionsAreBounded() {
        var decisions = HTTPDNSReportDecisions(hold: 600, maxDecisions: 2)
        for (index, address) in [first, second, third].enumerated() {
            _ = decisions.probeFinished(address, reachable: index != 1, views: [("v", 3)], host: "a.test", port: 443, now: Double(index))
        }
        XCTAssertEqual(decisions.inForce(now: 10).count, 2)
        XCTAssertEqual(decisions.evicted, 1)
        // The one ending soonest (the first) went.
        XCTAssertFalse(decisions.isDemoted(first, view: "v", now: 10))
        XCTAssertTrue(decisions.isDown(second, now: 10))
        XCTAssertTrue(decisions.isDemoted(third, view: "v", now: 10))
    }
}
