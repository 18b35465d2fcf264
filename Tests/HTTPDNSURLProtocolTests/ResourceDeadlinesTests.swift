import Foundation
import HTTPDNSCore
import XCTest
@testable import HTTPDNSURLSession

/// One timer for every load's resource timeout: each expires once, in deadline order, and a
/// cancelled one never does.
final class ResourceDeadlinesTests: XCTestCase {
    private final class Log: Sendable {
        let fired = HTTPDNSLock<[String]>([])
        func record(_ name: String) { fired.withLock { $0.append(name) } }
        var names: [String] { fired.withLock { $0 } }
    }

    func testDeadlinesExpireInOrderAndCancelledOnesNever() async throws {
        let deadlines = ResourceDeadlines()
        let log = Log()
        // A far one first (the timer waits for it), then nearer ones that must move the timer.
        _ = deadlines.add(after: 3600) { log.record("hour") }
        _ = deadlines.add(after: 0.3) { log.record("late") }
        let cancelled = deadlines.add(after: 0.1) { log.record("cancelled") }
        _ = deadlines.add(after: 0.15) { log.record("early") }
        deadlines.cancel(cancelled)
        XCTAssertEqual(deadlines.count, 3)
        for _ in 0..<100 where log.names.count < 2 {
            try await Task.sleep(for: .milliseconds(20))
        }
        try await Task.sleep(for: .milliseconds(100))
        XCTAssertEqual(log.names, ["early", "late"])
        XCTAssertEqual(deadlines.count, 1, "the hour-long entry waits")
    }

    func testAnEntryCancelledBeforeTheTimerFiresLeavesTheRestOnTime() async throws {
        let deadlines = ResourceDeadlines()
        let log = Log()
        let first = deadlines.add(after: 0.05) { log.record("first") }
        _ = deadlines.add(after: 0.2) { log.record("second") }
        deadlines.cancel(first)
        let start = ContinuousClock.now
        for _ in 0..<100 where log.names.isEmpty {
            try await Task.sleep(for: .milliseconds(10))
        }
        XCTAssertEqual(log.names, ["second"])
        XCTAssertGreaterThanOrEqual(ContinuousClock.now - start, .milliseconds(150))
        XCTAssertEqual(deadlines.count, 0)
    }
}
