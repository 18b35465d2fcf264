import DNSSockets
import DNSWire
import DNSZoneTransfer
import HTTPDNSCore
@testable import HTTPDNSFleet
import HTTPDNSTestSupport
import XCTest

/// A secondary's timers as values, and the loop following Knot DNS as a real primary (issue 24).
final class HTTPDNSSecondaryTests: XCTestCase {
    private func soa(serial: UInt32, refresh: UInt32 = 60, retry: UInt32 = 10, expire: UInt32 = 600) throws -> DNSSOA {
        DNSSOA(primaryServer: try DNSName("ns1.example.test"), responsible: try DNSName("hostmaster.example.test"),
               serial: serial, refresh: refresh, retry: retry, expire: expire, minimum: 30)
    }

    func testTimersFollowTheSOAClampedAndANotifyAsksAtOnce() throws {
        var timers = HTTPDNSSecondaryTimers()
        XCTAssertEqual(timers.nextAttempt, 0, "the first attempt at once")
        timers.failed(now: 5)
        XCTAssertEqual(timers.nextAttempt, 15, "no zone yet: the initial retry (10 s)")
        timers.succeeded(try soa(serial: 1), now: 20)
        XCTAssertEqual(timers.nextAttempt, 80, "REFRESH after a transfer")
        timers.failed(now: 80)
        XCTAssertEqual(timers.nextAttempt, 90, "RETRY after a failure")
        timers.notified(now: 85)
        XCTAssertEqual(timers.nextAttempt, 85, "a NOTIFY: now")
        XCTAssertFalse(timers.isExpired(now: 620))
        XCTAssertTrue(timers.isExpired(now: 621), "EXPIRE (600 s) since the last confirmation")
        timers.succeeded(try soa(serial: 2, refresh: 0, retry: 0), now: 700)
        XCTAssertEqual(timers.nextAttempt, 701, "REFRESH 0 is clamped to 1 s")
        timers.succeeded(try soa(serial: 3, refresh: .max), now: 700)
        XCTAssertEqual(timers.nextAttempt, 700 + 86_400, "a huge REFRESH is clamped to a day")
        XCTAssertFalse(timers.isExpired(now: 800))
    }

    func testANotifyDuringAnAttemptAsksAgainRightAfterASuccess() throws {
        var timers = HTTPDNSSecondaryTimers()
        timers.attemptStarted()
        timers.succeeded(try soa(serial: 1), now: 10)
        XCTAssertEqual(timers.nextAttempt, 70)
        timers.attemptStarted()
        timers.notified(now: 75)
        timers.succeeded(try soa(serial: 1), now: 76)
        XCTAssertEqual(timers.nextAttempt, 76, "the attempt may have read the zone before the change announced: again now")
        timers.attemptStarted()
        timers.succeeded(try soa(serial: 2), now: 77)
        XCTAssertEqual(timers.nextAttempt, 137, "once")
        timers.notified(now: 80)
        XCTAssertEqual(timers.nextAttempt, 80, "between attempts a NOTIFY asks at once, as ever")
        timers.attemptStarted()
        timers.notified(now: 81)
        timers.failed(now: 82)
        XCTAssertEqual(timers.nextAttempt, 92, "after a failure RETRY holds")
    }

    /// Collects the secondary's events for the test to wait on.
    private final class Events: Sendable {
        let list = HTTPDNSLock<[HTTPDNSSecondary.Event]>([])
        func add(_ event: HTTPDNSSecondary.Event) { list.withLock { $0.append(event) } }
        var loadedSerials: [UInt32] {
            list.withLock { $0.compactMap { if case .loaded(let zone, _) = $0 { zone.soa.serial } else { nil } } }
        }
        var incrementalCount: Int { list.withLock { $0.filter { if case .loaded(_, true) = $0 { true } else { false } }.count } }
        var failures: [String] {
            list.withLock { events in
                events.flatMap { event -> [String] in
                    if case .failed(let reasons) = event { return reasons.map(\.description) }
                    return []
                }
            }
        }
    }

    /// Polls `condition` for up to 15 s (a transfer from a local primary takes milliseconds).
    private func waitFor(_ events: Events, _ what: String, _ condition: () -> Bool) async throws {
        let deadline = ContinuousClock.now + .seconds(15)
        while !condition() {
            guard ContinuousClock.now < deadline else { return XCTFail("\(what) within 15 s; events: \(events.list.withLock { $0 })") }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    func testFollowsKnotByAXFRThenIXFROnItsRefreshAndKeepsTheZoneWhenThePrimaryGoes() async throws {
        // REFRESH 1 s, so that the timer is seen to work.
        let knot = try KnotServer(refresh: 1, retry: 1, records: ["www 300 A 192.0.2.1"])
        defer { knot.stop() }
        let key = try DNSTSIGKey(commandLine: "hmac-sha256:\(knot.keyName):\(knot.keySecret)")
        var configuration = HTTPDNSSecondary.Configuration(
            zone: try DNSName("example.test"), primaries: [SocketAddress(address: knot.address, port: knot.port)], key: key)
        configuration.transferTimeout = .seconds(10)
        let events = Events()
        let secondary = HTTPDNSSecondary(configuration: configuration) { events.add($0) }
        secondary.start()
        defer { secondary.stop() }
        try await waitFor(events, "the first zone") { events.loadedSerials == [1] }
        try knot.change(set: ["new 300 A 192.0.2.9"])
        try await waitFor(events, "serial 2 at the next REFRESH") { events.loadedSerials == [1, 2] }
        XCTAssertEqual(events.incrementalCount, 1, "the refresh took an IXFR")
        XCTAssertEqual(secondary.current?.soa.serial, 2)
        XCTAssertFalse(secondary.isExpired)

        // The primary gone: failures, the zone held stays.
        knot.stop()
        try await waitFor(events, "a failed attempt") { !events.failures.isEmpty }
        XCTAssertEqual(secondary.current?.soa.serial, 2)
    }

    func testANotifyAsksBeforeTheRefreshAndAnOlderSerialIsRefused() async throws {
        let knot = try KnotServer(serial: 10, refresh: 300, retry: 300, records: ["www 300 A 192.0.2.1"])
        defer { knot.stop() }
        let key = try DNSTSIGKey(commandLine: "hmac-sha256:\(knot.keyName):\(knot.keySecret)")
        var configuration = HTTPDNSSecondary.Configuration(
            zone: try DNSName("example.test"), primaries: [SocketAddress(address: knot.address, port: knot.port)], key: key)
        configuration.transferTimeout = .seconds(10)
        let events = Events()
        let secondary = HTTPDNSSecondary(configuration: configuration) { events.add($0) }
        secondary.start()
        defer { secondary.stop() }
        try await waitFor(events, "the first zone") { events.loadedSerials == [10] }
        try knot.change(set: ["new 300 A 192.0.2.9"])
        secondary.notify()
        try await waitFor(events, "serial 11 on the NOTIFY, long before REFRESH (300 s)") { events.loadedSerials == [10, 11] }

        // A primary that went back to an older serial (restored from a backup): refused, 11 kept.
        let older = try KnotServer(serial: 5, refresh: 300, retry: 300, records: ["www 300 A 192.0.2.66"])
        defer { older.stop() }
        var backwards = HTTPDNSSecondary.Configuration(
            zone: try DNSName("example.test"), primaries: [SocketAddress(address: older.address, port: older.port)],
            key: try DNSTSIGKey(commandLine: "hmac-sha256:\(older.keyName):\(older.keySecret)"))
        backwards.transferTimeout = .seconds(10)
        let backwardsEvents = Events()
        let follower = HTTPDNSSecondary(configuration: backwards, restored: secondary.current.map { ($0, 0) }) { backwardsEvents.add($0) }
        follower.start()
        defer { follower.stop() }
        let deadline = ContinuousClock.now + .seconds(15)
        while backwardsEvents.failures.isEmpty, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
        XCTAssertTrue(backwardsEvents.failures.contains { $0.contains("serialWentBackwards") || $0.contains("not newer") }, "\(backwardsEvents.failures)")
        XCTAssertEqual(follower.current?.soa.serial, 11, "the newer zone held stays")
    }

    /// The primary changes the zone and sends its NOTIFY while the secondary's check is under way
    /// (held here until then; the check read serial 1): the secondary asks again once the check is
    /// done, rather than at REFRESH (300 s), when the NOTIFY would have been lost.
    func testANotifyDuringATransferIsNotLost() async throws {
        let zone = try DNSName("example.test")
        let serial = HTTPDNSLock<UInt32>(1)
        let gate = TestGate()
        let primary = try FakeTransferPrimary { query, index in
            let now = serial.withLock { $0 }
            var answers = FakeTransferPrimary.zone(zone, serial: now, records: [FakeTransferPrimary.a("www", in: zone, "192.0.2.\(now)")])
            if query.questions.first?.type == .IXFR, now == 1 { answers = [answers[0]] }
            if index == 2 { gate.wait(timeout: .seconds(20)) }
            return FakeTransferPrimary.stream(answering: query, answers: answers)
        }
        defer { primary.stop() }
        var configuration = HTTPDNSSecondary.Configuration(zone: zone, primaries: [SocketAddress(address: primary.address, port: primary.port)])
        configuration.transferTimeout = .seconds(30)
        let events = Events()
        let secondary = HTTPDNSSecondary(configuration: configuration) { events.add($0) }
        secondary.start()
        defer { secondary.stop() }
        try await waitFor(events, "the first zone") { events.loadedSerials == [1] }
        secondary.notify()
        try await waitFor(events, "the second query, held") { primary.queries.count == 2 }
        serial.withLock { $0 = 2 }
        secondary.notify()
        gate.open()
        try await waitFor(events, "serial 2 after the held check") { events.loadedSerials == [1, 2] }
        XCTAssertEqual(primary.queries.count, 3)
    }

    /// A zone no primary confirms for its SOA EXPIRE expires while the secondary waits for its next
    /// RETRY (a deadline of its own), and is no longer served; a copy from disk already past it
    /// starts expired.
    func testAZoneUnconfirmedPastItsExpireIsNoLongerServed() async throws {
        let knot = try KnotServer(refresh: 1, retry: 60, expire: 2, records: ["www 300 A 192.0.2.1"])
        defer { knot.stop() }
        var configuration = HTTPDNSSecondary.Configuration(
            zone: try DNSName("example.test"), primaries: [SocketAddress(address: knot.address, port: knot.port)],
            key: try DNSTSIGKey(commandLine: "hmac-sha256:\(knot.keyName):\(knot.keySecret)"))
        configuration.transferTimeout = .seconds(5)
        let events = Events()
        let secondary = HTTPDNSSecondary(configuration: configuration) { events.add($0) }
        secondary.start()
        defer { secondary.stop() }
        try await waitFor(events, "the first zone") { events.loadedSerials == [1] }
        knot.stop()
        let expired = { events.list.withLock { $0.contains { if case .expired(let serial) = $0 { serial.rawValue == 1 } else { false } } } }
        try await waitFor(events, "the expiry, 2 s after the last confirmation (RETRY is 60 s)", expired)
        XCTAssertTrue(secondary.isExpired)
        XCTAssertNil(secondary.served)
        XCTAssertEqual(secondary.current?.soa.serial, 1, "kept as the base of an IXFR")

        let restored = try XCTUnwrap(secondary.current)
        let stale = HTTPDNSSecondary(configuration: configuration, restored: (restored, 3)) { _ in }
        XCTAssertTrue(stale.isExpired)
        XCTAssertNil(stale.served)
        let fresh = HTTPDNSSecondary(configuration: configuration, restored: (restored, 1)) { _ in }
        XCTAssertFalse(fresh.isExpired)
        XCTAssertEqual(fresh.served?.soa.serial, 1)
    }
}
