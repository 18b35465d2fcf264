import HTTPDNS
import HTTPDNSCore
import XCTest

/// Optimistic mode (RFC 8767 section 5; Alibaba's and Tencent's "expired IP"), on the manual clock.
final class HTTPDNSEngineOptimisticTests: XCTestCase {
    func testOptimisticServesAnExpiredAnswerAtOnceAndRefreshesInTheBackground() async throws {
        let clock = HTTPDNSManualClock()
        let provider = FakeResolver("p", .answer(["198.51.100.1"], ttl: 60))
        let monitor = RecordingMonitor()
        let subject = engine([provider], clock: clock, monitor: monitor) {
            $0.cache.optimisticMaximumStaleness = .seconds(3_600)
        }
        _ = try await subject.resolve("o.example")
        clock.advance(by: 61)
        // The refresh hangs: the caller must not wait for it.
        provider.set(.hang)
        let served = try await subject.resolve("o.example")
        XCTAssertTrue(served.isStale)
        XCTAssertTrue(served.fromCache)
        XCTAssertEqual(served.ttl, 30, "stale answers carry the stale TTL (RFC 8767)")
        XCTAssertEqual(served.addresses.map(\.description), ["198.51.100.1"])
        try await waitUntil { provider.calls == 2 }
        // A second expired hit while the refresh runs starts no second one.
        _ = try await subject.resolve("o.example")
        XCTAssertEqual(subject.upstreamLookupCount, 2)
        XCTAssertTrue(monitor.events.contains("stale o.example"))
    }

    func testOptimisticRefreshReplacesTheExpiredAnswer() async throws {
        let clock = HTTPDNSManualClock()
        let provider = FakeResolver("p", .answer(["198.51.100.1"], ttl: 60))
        let monitor = RecordingMonitor()
        let subject = engine([provider], clock: clock, monitor: monitor) {
            $0.cache.optimisticMaximumStaleness = .seconds(600)
        }
        _ = try await subject.resolve("o.example")
        clock.advance(by: 120)
        provider.set(.answer(["198.51.100.2"], ttl: 60))
        let stale = try await subject.resolve("o.example")
        XCTAssertEqual(stale.addresses.map(\.description), ["198.51.100.1"])
        try await waitUntil { monitor.events.contains("refreshed o.example") }
        let fresh = try await subject.resolve("o.example")
        XCTAssertFalse(fresh.isStale)
        XCTAssertEqual(fresh.addresses.map(\.description), ["198.51.100.2"])
    }

    func testOptimisticStopsAtTheMaximumStaleness() async throws {
        let clock = HTTPDNSManualClock()
        let provider = FakeResolver("p", .answer(["198.51.100.1"], ttl: 60))
        let subject = engine([provider], clock: clock) {
            $0.cache.optimisticMaximumStaleness = .seconds(300)
        }
        _ = try await subject.resolve("o.example")
        clock.advance(by: 60 + 301)
        provider.set(.answer(["198.51.100.2"], ttl: 60))
        let answer = try await subject.resolve("o.example")
        XCTAssertFalse(answer.isStale, "past the maximum staleness the lookup waits for upstream")
        XCTAssertFalse(answer.fromCache)
        XCTAssertEqual(answer.addresses.map(\.description), ["198.51.100.2"])
    }

    func testOptimisticOffWaitsForUpstream() async throws {
        let clock = HTTPDNSManualClock()
        let provider = FakeResolver("p", .answer(["198.51.100.1"], ttl: 60))
        let subject = engine([provider], clock: clock)
        _ = try await subject.resolve("o.example")
        clock.advance(by: 61)
        provider.set(.answer(["198.51.100.2"], ttl: 60))
        let answer = try await subject.resolve("o.example")
        XCTAssertFalse(answer.isStale)
        XCTAssertEqual(answer.addresses.map(\.description), ["198.51.100.2"])
    }

    func testOptimisticNeverServesAnswersKeptFromThePreviousNetwork() async throws {
        let clock = HTTPDNSManualClock()
        let provider = FakeResolver("p", .answer(["198.51.100.1"], ttl: 600))
        let subject = engine([provider], clock: clock) {
            $0.cache.optimisticMaximumStaleness = .seconds(3_600)
            $0.network.keepsStaleAnswersOnChange = true
        }
        _ = try await subject.resolve("o.example")
        await subject.networkDidChange().value
        provider.set(.answer(["198.51.100.2"], ttl: 600))
        let answer = try await subject.resolve("o.example")
        XCTAssertFalse(answer.isStale, "an answer from the old network is a last resort, not an optimistic answer")
        XCTAssertEqual(answer.addresses.map(\.description), ["198.51.100.2"])
    }
}
