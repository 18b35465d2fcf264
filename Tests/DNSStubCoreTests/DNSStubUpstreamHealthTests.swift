import DNSStubCore
import HTTPDNSCore
import XCTest

/// The upstreams' down state (RFC 8767 §5 failure recheck timer) with an explicit `now`.
final class DNSStubUpstreamHealthTests: XCTestCase {
    func testDownAfterAFailureForTheDownPeriodUntilAnAnswer() {
        var health = DNSStubUpstreamHealth()
        XCTAssertEqual(health.configuration.downPeriod, 5)
        XCTAssertEqual(health.configuration.clientResponseTimer, .milliseconds(1800))
        XCTAssertFalse(health.isDown(now: 0), "not down before any failure")
        health.recordFailure(now: 10)
        XCTAssertTrue(health.isDown(now: 10))
        XCTAssertTrue(health.isDown(now: 14.9))
        XCTAssertFalse(health.isDown(now: 15), "rechecked after the down period")
        health.recordFailure(now: 15)
        health.recordFailure(now: 18)
        XCTAssertTrue(health.isDown(now: 22.9), "a failed background refresh extends it")
        health.recordAnswer()
        XCTAssertFalse(health.isDown(now: 19), "an answer ends it at once")
    }

    func testConfiguredPeriod() {
        var configuration = DNSStubUpstreamHealth.Configuration()
        configuration.downPeriod = 0
        var health = DNSStubUpstreamHealth(configuration: configuration)
        health.recordFailure(now: 1)
        XCTAssertFalse(health.isDown(now: 1), "0 turns the memory off")
    }
}
