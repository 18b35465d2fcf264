@testable import HTTPDNS
import HTTPDNSCore
import XCTest

/// The per-thread hit memo must never serve what the shared cache would not. Each check runs its
/// cache reads back to back without suspending, so they stay on one thread and meet one memo.
final class HTTPDNSHitMemoTests: XCTestCase {
    /// Fills the cache, then reads it on this thread until the memo holds it (the second hit in a
    /// row copies it).
    private func primed(_ subject: HTTPDNSEngine, _ host: String) async throws {
        _ = try await subject.resolve(host)
        XCTAssertNotNil(subject.cachedAnswer(host))
        XCTAssertFalse(memoHolds(subject, host), "one hit is not enough to copy an entry")
        XCTAssertNotNil(subject.cachedAnswer(host))
        XCTAssertTrue(memoHolds(subject, host), "the second fresh hit was memoised")
    }

    private func memoHolds(_ subject: HTTPDNSEngine, _ host: String) -> Bool {
        HTTPDNSHitMemo.contains(.init(engine: subject.serial, host: host, family: .ipv4))
    }

    func testInvalidateReachesTheMemo() async throws {
        let provider = FakeResolver("p", .answer(["198.51.100.1"], ttl: 600))
        let subject = engine([provider])
        try await primed(subject, "m.example")
        subject.invalidate("m.example")
        XCTAssertNil(subject.cachedAnswer("m.example"))
    }

    func testNewAnswerReplacesTheMemoisedOne() async throws {
        let clock = HTTPDNSManualClock()
        let provider = FakeResolver("p", .answer(["198.51.100.1"], ttl: 100))
        let subject = engine([provider], clock: clock)
        try await primed(subject, "n.example")
        clock.advance(by: 101)
        provider.set(.answer(["198.51.100.2"], ttl: 100))
        let fresh = try await subject.resolve("n.example")
        XCTAssertEqual(fresh.addresses.map(\.description), ["198.51.100.2"])
        XCTAssertEqual(subject.cachedAnswer("n.example")?.addresses.map(\.description), ["198.51.100.2"])
        XCTAssertEqual(subject.cachedAnswer("n.example")?.addresses.map(\.description), ["198.51.100.2"])
    }

    func testCoolDownReordersAMemoisedAnswerAtOnce() async throws {
        let provider = FakeResolver("p", .answer(["198.51.100.10", "198.51.100.11"], ttl: 600))
        let subject = engine([provider])
        try await primed(subject, "k.example")
        subject.reportUnreachable(HTTPDNSIPAddress("198.51.100.10")!)
        XCTAssertEqual(subject.cachedAnswer("k.example")?.addresses.map(\.description), ["198.51.100.11", "198.51.100.10"])
        XCTAssertFalse(memoHolds(subject, "k.example"), "an answer with a cooling address is not memoised")
    }

    func testMemoStopsAtTheRefreshPointSoTheRefreshStillStarts() async throws {
        let clock = HTTPDNSManualClock()
        let provider = FakeResolver("p", .answer(["198.51.100.1"], ttl: 100))
        let monitor = RecordingMonitor()
        let subject = engine([provider], clock: clock, monitor: monitor)
        try await primed(subject, "r.example")
        XCTAssertEqual(subject.cachedAnswer("r.example")?.ttl, 100)
        clock.advance(by: 74)
        XCTAssertEqual(subject.cachedAnswer("r.example")?.ttl, 26, "the TTL counts down in memo hits too")
        clock.advance(by: 2)
        _ = try await subject.resolve("r.example")
        try await waitUntil { monitor.events.contains("refreshed r.example") }
        XCTAssertEqual(provider.calls, 2)
    }

    func testEnginesDoNotShareMemoEntries() async throws {
        let first = engine([FakeResolver("one", .answer(["198.51.100.1"], ttl: 600))])
        let second = engine([FakeResolver("two", .answer(["198.51.100.2"], ttl: 600))])
        try await primed(first, "same.example")
        try await primed(second, "same.example")
        XCTAssertEqual(first.cachedAnswer("same.example")?.source, "one")
        XCTAssertEqual(second.cachedAnswer("same.example")?.source, "two")
        XCTAssertEqual(first.cachedAnswer("same.example")?.addresses.map(\.description), ["198.51.100.1"])
    }

    func testEveryHitIsReportedAndTheSharedCacheIsStillTouched() async throws {
        let provider = FakeResolver("p", .answer(["198.51.100.1"], ttl: 600))
        let monitor = RecordingMonitor()
        let subject = engine([provider], monitor: monitor) { $0.cache.policy.capacity = 2 }
        try await primed(subject, "hot.example")
        _ = try await subject.resolve("b.example")
        // 100 memo-era hits on hot.example, then a new name: the least recently used entry in the
        // shared cache must be b.example, not hot.example (the memo touches the cache now and then).
        for _ in 0..<100 { _ = try await subject.resolve("hot.example") }
        _ = try await subject.resolve("c.example")
        XCTAssertNotNil(subject.cachedAnswer("hot.example"))
        XCTAssertNil(subject.cachedAnswer("b.example"))
        let hits = monitor.events.filter { $0 == "hit hot.example" }.count
        XCTAssertGreaterThanOrEqual(hits, 100, "memo hits are reported like any other hit")
    }
}
