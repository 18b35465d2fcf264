import Foundation
import HTTPDNSCore
import HTTPDNSServer
import XCTest

/// The health values without sockets: the zone's `check` member, the up/down machine with explicit
/// times, the scheduler with fixed randomness, the table across reloads, the on-demand choice.
final class HTTPDNSHealthStateTests: XCTestCase {
    private let t0 = ContinuousClock.now
    private let a = HTTPDNSIPAddress("192.0.2.1")!
    private let b = HTTPDNSIPAddress("192.0.2.2")!

    private func zone(_ json: String) throws(HTTPDNSServiceError) -> HTTPDNSZone {
        try HTTPDNSZone(json: Data(json.utf8))
    }

    private func zoneError(_ json: String, file: StaticString = #filePath, line: UInt = #line) -> String {
        do throws(HTTPDNSServiceError) {
            _ = try zone(json)
            XCTFail("accepted \(json)", file: file, line: line)
            return ""
        } catch {
            XCTAssertEqual(error.code, .invalidZone, file: file, line: line)
            return error.detail
        }
    }

    // MARK: Zone file

    func testCheckDefaultsAndEveryMember() throws {
        let parsed = try zone("""
            {"www.example.test": {"A": ["192.0.2.1"], "check": {"type": "https", "port": 8443, "path": "/health?x=1",
              "expect": "3XX", "interval": 0.2, "timeout": 0.15, "rise": 4, "fall": 5, "jitter": 0.25}},
             "a.example.test": {"A": ["192.0.2.1"], "check": {"TYPE": "tls"}},
             "b.example.test": {"A": ["192.0.2.1"], "Check": {"type": "TCP"}}}
            """)
        let full = try XCTUnwrap(parsed.entries["www.example.test"]?.check)
        XCTAssertEqual(full.kind, .https)
        XCTAssertEqual(full.port, 8443)
        XCTAssertEqual(full.path, "/health?x=1")
        XCTAssertEqual(full.expect, 3)
        XCTAssertEqual(full.interval, .milliseconds(200))
        XCTAssertEqual(full.timeout, .milliseconds(150))
        XCTAssertEqual(full.rise, 4)
        XCTAssertEqual(full.fall, 5)
        XCTAssertEqual(full.jitter, 0.25)
        XCTAssertEqual(full.label, "https:8443/health?x=1 3xx")
        let tls = try XCTUnwrap(parsed.entries["a.example.test"]?.check)
        XCTAssertEqual(tls, HTTPDNSHealthCheck(.tls))
        XCTAssertEqual(tls.port, 443)
        XCTAssertEqual(tls.interval, .seconds(5))
        XCTAssertEqual(tls.timeout, .seconds(2))
        XCTAssertEqual([tls.rise, tls.fall], [2, 3])
        XCTAssertEqual(tls.jitter, 0.1)
        XCTAssertEqual(parsed.entries["b.example.test"]?.check?.port, 80)
        XCTAssertNil(try zone(#"{"c.example.test": {"A": ["192.0.2.1"]}}"#).entries["c.example.test"]?.check)
    }

    func testHostileCheckValuesAreRefusedWithTheirPosition() {
        let entry = { (check: String) in #"{"www.example.test": {"A": ["192.0.2.1"], "check": \#(check)}}"# }
        let cases: [(String, String)] = [
            ("[]", "check is an object"),
            ("{}", "type is required"),
            (#"{"type": "udp"}"#, "unknown type"),
            (#"{"type": 1}"#, "type is required"),
            (#"{"type": "tcp", "port": 0}"#, "port must be"),
            (#"{"type": "tcp", "port": 65536}"#, "port must be"),
            (#"{"type": "tcp", "port": "80"}"#, "port must be"),
            (#"{"type": "tcp", "port": 80.5}"#, "port must be"),
            (#"{"type": "tcp", "interval": 0.01}"#, "interval must be"),
            (#"{"type": "tcp", "interval": 1e9}"#, "interval must be"),
            (#"{"type": "tcp", "interval": -1}"#, "interval must be"),
            (#"{"type": "tcp", "interval": "5"}"#, "interval must be"),
            (#"{"type": "tcp", "timeout": 61}"#, "timeout must be"),
            (#"{"type": "tcp", "rise": 0}"#, "rise must be"),
            (#"{"type": "tcp", "fall": 101}"#, "fall must be"),
            (#"{"type": "tcp", "jitter": 0.6}"#, "jitter must be"),
            (#"{"type": "tcp", "jitter": 1e400}"#, "jitter must be"),
            (#"{"type": "http", "expect": "200"}"#, "expect must be"),
            (#"{"type": "http", "expect": "1xx"}"#, "expect must be"),
            (#"{"type": "http", "path": "health"}"#, "path must start"),
            (#"{"type": "http", "path": "/a b"}"#, "path must start"),
            (#"{"type": "http", "path": "/a\"b"}"#, "path must start"),
            (#"{"type": "http", "path": "/\u00e9"}"#, "path must start"),
            (#"{"type": "http", "path": "/\#(String(repeating: "a", count: 1_024))"}"#, "path must start"),
            (#"{"type": "tcp", "path": "/x"}"#, "path belongs to http and https checks, not tcp"),
            (#"{"type": "tls", "expect": "3xx"}"#, "expect belongs to http and https checks, not tls"),
            // By presence, not by value: the defaults written out are refused as well (issue 32).
            (#"{"type": "tcp", "path": "/"}"#, "path belongs to http and https checks, not tcp"),
            (#"{"type": "tls", "expect": "2xx"}"#, "expect belongs to http and https checks, not tls"),
            (#"{"type": "TCP", "EXPECT": "2xx"}"#, "expect belongs to http and https checks, not tcp"),
            (#"{"type": "tcp", "tiemout": 1}"#, "unknown member \"tiemout\""),
            (#"{"type": "tcp", "Port": 1, "port": 2}"#, "listed twice"),
        ]
        for (check, expected) in cases {
            let detail = zoneError(entry(check))
            XCTAssertTrue(detail.hasPrefix("zone:1:2: \"www.example.test\": "), "\(check): \(detail)")
            XCTAssertTrue(detail.contains(expected), "\(check): \(detail)")
        }
        XCTAssertTrue(zoneError(#"{"a.test": {"CNAME": "b.test", "check": {"type": "tcp"}}}"#).contains("CNAME cannot have a check"))
        XCTAssertTrue(zoneError(#"{"a.test": {"check": {"type": "tcp"}}}"#).contains("needs addresses"))
        XCTAssertTrue(zoneError(#"{"*.a.test": {"A": ["192.0.2.1"], "check": {"type": "tls"}}}"#).contains("only have a tcp check"))
        XCTAssertNoThrow(try zone(#"{"*.a.test": {"A": ["192.0.2.1"], "check": {"type": "tcp"}}}"#))
        // One address probed alike by two names must be probed with one timing.
        let disagreeing = zoneError("""
            {"a.test": {"A": ["192.0.2.1"], "check": {"type": "tcp", "interval": 1}},
             "b.test": {"A": ["192.0.2.1"], "check": {"type": "tcp", "interval": 2}}}
            """)
        XCTAssertTrue(disagreeing.hasPrefix("zone:2:2: b.test: checks 192.0.2.1 (tcp:80) with other settings than a.test"), disagreeing)
        // Entries built in code are checked as strictly.
        var bad = HTTPDNSHealthCheck(.tcp)
        bad.rise = 0
        XCTAssertThrowsError(try HTTPDNSZone(entries: ["a.test": .init(ipv4: [a], check: bad)]))
    }

    // MARK: Up and down

    func testStartsUpFallsAfterFallFailuresAndRisesAfterRiseSuccesses() {
        var check = HTTPDNSHealthCheck(.tcp)
        (check.rise, check.fall) = (2, 3)
        var status = HTTPDNSHealthStatus(check: check, now: t0)
        XCTAssertTrue(status.isUp)
        XCTAssertNil(status.last)
        func probe(_ passed: Bool, _ second: Int) -> Bool {
            status.record(.init(passed: passed, error: passed ? nil : "refused", at: t0 + .seconds(second)))
        }
        XCTAssertFalse(probe(false, 1))
        XCTAssertFalse(probe(false, 2))
        XCTAssertFalse(probe(true, 3))  // a pass resets the count of failures
        XCTAssertFalse(probe(false, 4))
        XCTAssertFalse(probe(false, 5))
        XCTAssertTrue(probe(false, 6))
        XCTAssertFalse(status.isUp)
        XCTAssertEqual(status.since, t0 + .seconds(6))
        XCTAssertEqual(status.last?.error, "refused")
        XCTAssertFalse(probe(true, 7))
        XCTAssertFalse(probe(false, 8))  // a failure resets the count of passes
        XCTAssertFalse(probe(true, 9))
        XCTAssertTrue(probe(true, 10))
        XCTAssertTrue(status.isUp)
        XCTAssertEqual(status.since, t0 + .seconds(10))
        XCTAssertEqual(status.probes, 10)
        XCTAssertEqual(status.failures, 6)
    }

    func testRiseAndFallOfOneFlipAtOnce() {
        var check = HTTPDNSHealthCheck(.tcp)
        (check.rise, check.fall) = (1, 1)
        var status = HTTPDNSHealthStatus(check: check, now: t0)
        XCTAssertTrue(status.record(.init(passed: false, at: t0)))
        XCTAssertTrue(status.record(.init(passed: true, at: t0)))
    }

    // MARK: Scheduler

    func testSchedulerSpreadsNewTargetsAndRespacesEachAfterItsProbe() {
        var check = HTTPDNSHealthCheck(.tcp)
        check.interval = .seconds(10)
        check.jitter = 0.2
        let first = HTTPDNSHealthTarget(address: a, check: check)
        let second = HTTPDNSHealthTarget(address: b, check: check)
        var scheduler = HTTPDNSHealthScheduler()
        var draws: [ClosedRange<Double>] = []
        scheduler.update(targets: [first, second], now: t0) { range in
            draws.append(range)
            return range.upperBound
        }
        XCTAssertEqual(draws, [0...0.2, 0...0.2])
        XCTAssertEqual(scheduler.dueTime(first), t0 + .seconds(2))
        XCTAssertEqual(scheduler.nextDue, t0 + .seconds(2))
        XCTAssertEqual(scheduler.takeDue(now: t0 + .seconds(1), limit: 10), [])
        XCTAssertEqual(Set(scheduler.takeDue(now: t0 + .seconds(2), limit: 10)), [first, second])
        // Probing: not due again, whatever the time, until it ends.
        XCTAssertNil(scheduler.nextDue)
        XCTAssertEqual(scheduler.takeDue(now: t0 + .seconds(100), limit: 10), [])
        XCTAssertTrue(scheduler.completed(first, now: t0 + .seconds(3)) { $0.lowerBound })
        XCTAssertEqual(scheduler.dueTime(first), t0 + .seconds(11))  // 10 s × (1 − 0.2)
        XCTAssertTrue(scheduler.completed(second, now: t0 + .seconds(3)) { _ in 0 })
        XCTAssertEqual(scheduler.dueTime(second), t0 + .seconds(13))
        XCTAssertFalse(scheduler.completed(second, now: t0 + .seconds(4)) { _ in 0 })  // not probing
    }

    func testSchedulerHandsOutAtMostTheLimitEarliestFirst() {
        var scheduler = HTTPDNSHealthScheduler()
        let targets = (1...5).map { HTTPDNSHealthTarget(address: HTTPDNSIPAddress("192.0.2.\($0)")!, check: HTTPDNSHealthCheck(.tcp)) }
        var offsets = [0.05, 0.04, 0.03, 0.02, 0.01][...]
        scheduler.update(targets: targets, now: t0) { _ in offsets.popFirst()! }
        let taken = scheduler.takeDue(now: t0 + .seconds(1), limit: 2)
        XCTAssertEqual(taken.count, 2)
        XCTAssertEqual(scheduler.probingCount, 2)
        XCTAssertEqual(scheduler.takeDue(now: t0 + .seconds(1), limit: 0), [])
        XCTAssertEqual(scheduler.takeDue(now: t0 + .seconds(1), limit: 10).count, 3)
    }

    func testSchedulerKeepsTimesOfRemainingTargetsAndForgetsDroppedOnes() {
        var scheduler = HTTPDNSHealthScheduler()
        let kept = HTTPDNSHealthTarget(address: a, check: HTTPDNSHealthCheck(.tcp))
        let dropped = HTTPDNSHealthTarget(address: b, check: HTTPDNSHealthCheck(.tcp))
        scheduler.update(targets: [kept, dropped], now: t0) { _ in 0.1 }
        let due = scheduler.dueTime(kept)
        XCTAssertEqual(scheduler.takeDue(now: t0 + .seconds(1), limit: 10).count, 2)
        scheduler.update(targets: [kept], now: t0 + .seconds(2)) { _ in 0 }
        XCTAssertFalse(scheduler.completed(dropped, now: t0 + .seconds(3)) { _ in 0 })
        XCTAssertTrue(scheduler.completed(kept, now: t0 + .seconds(3)) { _ in 0 })
        XCTAssertNotEqual(scheduler.dueTime(kept), due)
        XCTAssertNil(scheduler.dueTime(dropped))
    }

    // MARK: Table and targets

    func testOneTargetPerAddressAndCheckWithItsNamesSorted() throws {
        let parsed = try zone("""
            {"b.example.test": {"A": ["192.0.2.1"], "check": {"type": "tls"}},
             "a.example.test": {"A": ["192.0.2.1", "192.0.2.2"], "AAAA": ["2001:db8::1"], "check": {"type": "tls"}},
             "c.example.test": {"A": ["192.0.2.1"], "check": {"type": "tcp", "port": 443}},
             "*.w.example.test": {"A": ["192.0.2.1"], "check": {"type": "tcp", "port": 443}},
             "d.example.test": {"A": ["192.0.2.1"]}}
            """)
        let targets = HTTPDNSHealthTargets(zone: parsed)
        XCTAssertEqual(targets.count, 4)
        let tls = HTTPDNSHealthTarget(address: a, check: HTTPDNSHealthCheck(.tls))
        XCTAssertEqual(targets.names[tls], ["a.example.test", "b.example.test"])
        XCTAssertEqual(targets.probeName(tls), "a.example.test")
        let tcp = HTTPDNSHealthTarget(address: a, check: HTTPDNSHealthCheck(.tcp, port: 443))
        XCTAssertEqual(targets.names[tcp], ["*.w.example.test", "c.example.test"])
        XCTAssertEqual(targets.probeName(tcp), "c.example.test")
    }

    func testTableRaisesTheGenerationOnEveryChangeAndKeepsRemainingStatesOnReload() {
        var check = HTTPDNSHealthCheck(.tcp)
        check.fall = 1
        let first = HTTPDNSHealthTarget(address: a, check: check)
        let second = HTTPDNSHealthTarget(address: b, check: check)
        var table = HTTPDNSHealthTable()
        table.update(targets: HTTPDNSHealthTargets(names: [first: ["a.test"], second: ["b.test"]]), now: t0)
        XCTAssertEqual(table.generation, 0)
        XCTAssertTrue(table.record(first, .init(passed: false, at: t0)))
        XCTAssertTrue(table.record(second, .init(passed: false, at: t0)))
        XCTAssertEqual(table.generation, 2)
        XCTAssertEqual(table.snapshot.down, [first, second])
        XCTAssertTrue(table.snapshot.isDown(a, check))
        XCTAssertFalse(table.snapshot.isDown(a, HTTPDNSHealthCheck(.tcp, port: 81)))
        // A reload that keeps `first` keeps it down; `second` is gone, and with it its down state.
        XCTAssertTrue(table.update(targets: HTTPDNSHealthTargets(names: [first: ["a.test"]]), now: t0))
        XCTAssertEqual(table.snapshot.down, [first])
        XCTAssertEqual(table.generation, 3)
        XCTAssertFalse(table.record(second, .init(passed: true, at: t0)))
        // Back again, `second` starts up.
        table.update(targets: HTTPDNSHealthTargets(names: [first: ["a.test"], second: ["b.test"]]), now: t0)
        XCTAssertEqual(table.statuses[second]?.isUp, true)
    }

    func testOnDemandProbeUsesTheZonesCheckForThatAddressAndPort() {
        var https = HTTPDNSHealthCheck(.https)
        https.path = "/health"
        let target = HTTPDNSHealthTarget(address: a, check: https)
        let targets = HTTPDNSHealthTargets(names: [target: ["a.example.test", "b.example.test"]])
        let named = HTTPDNSHealthMonitor.onDemandProbe(address: a, port: 443, name: "b.example.test", targets)
        XCTAssertEqual(named, HTTPDNSHealthProbe(address: a, check: https, name: "b.example.test"))
        // A name that does not use the address is never sent: the target's own name is.
        let other = HTTPDNSHealthMonitor.onDemandProbe(address: a, port: 443, name: "evil.test", targets)
        XCTAssertEqual(other.name, "a.example.test")
        let unchecked = HTTPDNSHealthMonitor.onDemandProbe(address: b, port: 8443, name: "a.example.test", targets)
        XCTAssertEqual(unchecked, HTTPDNSHealthProbe(address: b, check: HTTPDNSHealthCheck(.tcp, port: 8443), name: nil))
    }

    // MARK: Monitor (a prober of the test's own)

    private final class CountingProber: HTTPDNSHealthProbing {
        let probes = HTTPDNSLock(0)
        let passes = HTTPDNSLock(true)

        func probe(_ probe: HTTPDNSHealthProbe) async -> HTTPDNSHealthProbeResult {
            probes.withLock { $0 += 1 }
            return HTTPDNSHealthProbeResult(passed: passes.withLock { $0 }, error: "scripted")
        }
    }

    private func waitFor(_ condition: () -> Bool) async throws {
        let started = ContinuousClock.now
        while !condition() {
            guard ContinuousClock.now - started < .seconds(10) else { return XCTFail("condition not met in 10 s") }
            try await Task.sleep(for: .milliseconds(10))
        }
    }

    func testTheMonitorPublishesEachChangeAndProbesAgainAfterARestart() async throws {
        var check = HTTPDNSHealthCheck(.tcp)
        (check.interval, check.jitter, check.rise, check.fall) = (.milliseconds(100), 0, 1, 1)
        let target = HTTPDNSHealthTarget(address: a, check: check)
        let prober = CountingProber()
        let snapshots = HTTPDNSLock<[HTTPDNSHealthSnapshot]>([])
        let monitor = HTTPDNSHealthMonitor(maxInFlight: 2, prober: prober, metrics: HTTPDNSServerMetrics()) { snapshot in
            snapshots.withLock { $0.append(snapshot) }
        }
        monitor.start(targets: HTTPDNSHealthTargets(names: [target: ["a.test"]]))
        try await waitFor { prober.probes.withLock { $0 } >= 1 }
        prober.passes.withLock { $0 = false }
        try await waitFor { snapshots.withLock { $0.last?.down } == [target] }
        prober.passes.withLock { $0 = true }
        try await waitFor { snapshots.withLock { $0.last?.down } == [] }
        XCTAssertEqual(snapshots.withLock { $0.map(\.generation) }, [1, 2])
        // Stopped, nothing runs; started again, probes resume at once.
        monitor.stop()
        try await Task.sleep(for: .milliseconds(50))
        let stopped = prober.probes.withLock { $0 }
        try await Task.sleep(for: .milliseconds(300))
        XCTAssertEqual(prober.probes.withLock { $0 }, stopped)
        monitor.start(targets: HTTPDNSHealthTargets(names: [target: ["a.test"]]))
        try await waitFor { prober.probes.withLock { $0 } >= stopped + 2 }
        monitor.stop()
        XCTAssertLessThanOrEqual(monitor.peakInFlight, 1)
    }

    /// Answers at once for even last address bytes (as a loopback connect does) and through a task
    /// for odd ones, so both of the monitor's paths run together.
    private final class MixedProber: HTTPDNSHealthProbing {
        let passes = HTTPDNSLock(false)
        let probes = HTTPDNSLock(0)

        func probe(_ probe: HTTPDNSHealthProbe) async -> HTTPDNSHealthProbeResult { result() }

        func begin(_ probe: HTTPDNSHealthProbe) -> HTTPDNSHealthProbeStart {
            probe.address.bytes.last! % 2 == 0 ? .finished(result()) : .running { self.result() }
        }

        private func result() -> HTTPDNSHealthProbeResult {
            probes.withLock { $0 += 1 }
            return HTTPDNSHealthProbeResult(passed: passes.withLock { $0 }, error: "scripted")
        }
    }

    func testProbesAnsweredAtOnceAndThroughTasksAreAllRecordedWithinTheBoundAndInTheMetrics() async throws {
        var check = HTTPDNSHealthCheck(.tcp)
        (check.interval, check.jitter, check.rise, check.fall) = (.milliseconds(100), 0.5, 1, 1)
        let targets = (1...40).map { HTTPDNSHealthTarget(address: HTTPDNSIPAddress("192.0.2.\($0)")!, check: check) }
        let prober = MixedProber()
        let metrics = HTTPDNSServerMetrics()
        let latest = HTTPDNSLock(HTTPDNSHealthSnapshot())
        let monitor = HTTPDNSHealthMonitor(maxInFlight: 3, prober: prober, metrics: metrics) { snapshot in
            latest.withLock { if snapshot.generation > $0.generation { $0 = snapshot } }
        }
        monitor.start(targets: HTTPDNSHealthTargets(names: Dictionary(uniqueKeysWithValues: targets.map { ($0, ["a.test"]) })))
        func upLines() -> [Substring] { metrics.render().split(separator: "\n").filter { $0.hasPrefix("httpdns_origin_up{") } }
        try await waitFor { latest.withLock { $0.down.count } == targets.count }
        XCTAssertEqual(upLines().count, targets.count)
        XCTAssertTrue(upLines().allSatisfy { $0.hasSuffix(" 0") }, "every address down in /metrics: \(upLines())")
        prober.passes.withLock { $0 = true }
        try await waitFor { latest.withLock { $0.down.isEmpty } }
        XCTAssertTrue(upLines().allSatisfy { $0.hasSuffix(" 1") }, "every address up again in /metrics: \(upLines())")
        monitor.stop()
        XCTAssertLessThanOrEqual(monitor.peakInFlight, 3)
        XCTAssertGreaterThanOrEqual(prober.probes.withLock { $0 }, 2 * targets.count)
    }
}
