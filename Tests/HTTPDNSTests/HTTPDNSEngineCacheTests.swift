import Foundation
import HTTPDNS
import HTTPDNSCore
import XCTest

final class HTTPDNSEngineCacheTests: XCTestCase {
    func testTTLFloorAndExpiry() async throws {
        let clock = HTTPDNSManualClock()
        let provider = FakeResolver("p", .answer(["198.51.100.1"], ttl: 5))
        let subject = engine([provider], clock: clock)
        let first = try await subject.resolve("a.example")
        XCTAssertEqual(first.ttl, 60, "TTL 5 is raised to the 60 s floor")
        // 44 s is before the background refresh (75 % of 60 s), so nothing can ask the provider
        // behind the test's back; 61 s is past expiry.
        clock.advance(by: 44)
        _ = try await subject.resolve("a.example")
        XCTAssertEqual(provider.calls, 1)
        clock.advance(by: 17)
        let expired = try await subject.resolve("a.example")
        XCTAssertFalse(expired.fromCache)
        XCTAssertEqual(provider.calls, 2)
    }

    /// The server resolves for many clients: an answer cached for one client subnet (EDNS Client
    /// Subnet) is never served to another, not even from the per-thread hit memo, which is keyed
    /// by host and family alone (hits in a row alternate subnets on one thread here: a memoised
    /// answer for the name would reach the other subnet).
    func testAnswersForOneClientSubnetNeverReachAnother() async throws {
        let provider = SubnetEchoResolver()
        let subject = engine([provider])
        let subnets = [
            HTTPDNSClientSubnet(client: HTTPDNSIPAddress("203.0.113.7")!)!, HTTPDNSClientSubnet(client: HTTPDNSIPAddress("198.51.100.9")!)!,
        ]
        for subnet in subnets {
            _ = try await subject.resolve("ecs.example", family: .ipv4, clientSubnet: subnet)
        }
        for _ in 0..<8 {
            for (index, subnet) in subnets.enumerated() {
                let answer = try await subject.resolve("ecs.example", family: .ipv4, clientSubnet: subnet)
                XCTAssertEqual(answer.addresses.map(\.description), [SubnetEchoResolver.addresses[index]], "\(subnet)")
            }
            let plain = try await subject.resolve("ecs.example", family: .ipv4)
            XCTAssertEqual(plain.addresses.map(\.description), ["192.0.2.99"])
        }
        XCTAssertEqual(provider.calls.withLock { $0 }, 3, "one lookup per subnet and one without")
    }

    /// The hit memo is keyed by the name as asked (so a repeated hit skips normalising it): every
    /// spelling's hits, memoised or not, carry the normalised name and the one cached entry.
    func testHitsOfEverySpellingCarryTheNormalisedName() async throws {
        let provider = FakeResolver("p", .answer(["198.51.100.7"], ttl: 300))
        let monitor = RecordingMonitor()
        let subject = engine([provider], monitor: monitor)
        for _ in 0..<4 {
            for spelling in ["WWW.Example.COM.", "www.example.com", "www.EXAMPLE.com"] {
                let answer = try await subject.resolve(spelling)
                XCTAssertEqual(answer.host, "www.example.com", spelling)
                XCTAssertEqual(answer.addresses.map(\.description), ["198.51.100.7"], spelling)
                XCTAssertEqual(subject.cachedAnswer(spelling)?.host, "www.example.com", spelling)
            }
        }
        XCTAssertEqual(provider.calls, 1)
        XCTAssertEqual(monitor.events.filter { $0.hasPrefix("hit ") }.count, 11, "\(monitor.events)")
        XCTAssertEqual(Set(monitor.events.filter { $0.hasPrefix("hit ") }), ["hit www.example.com"])
    }

    func testTTLCeiling() async throws {
        let provider = FakeResolver("p", .answer(["198.51.100.1"], ttl: 10_000_000))
        let subject = engine([provider]) { $0.cache.policy.maximumTTL = 3_600 }
        let answer = try await subject.resolve("a.example")
        XCTAssertEqual(answer.ttl, 3_600)
    }

    func testBackgroundRefreshAtThreeQuarters() async throws {
        let clock = HTTPDNSManualClock()
        let provider = FakeResolver("p", .answer(["198.51.100.1"], ttl: 100))
        let monitor = RecordingMonitor()
        let subject = engine([provider], clock: clock, monitor: monitor)
        _ = try await subject.resolve("r.example")
        clock.advance(by: 74)
        _ = try await subject.resolve("r.example")
        XCTAssertEqual(provider.calls, 1, "before 75 % no refresh")
        clock.advance(by: 2)
        provider.set(.answer(["198.51.100.2"], ttl: 100))
        let served = try await subject.resolve("r.example")
        XCTAssertEqual(served.addresses.map(\.description), ["198.51.100.1"], "the hit is served at once")
        try await waitUntil { monitor.events.contains("refreshed r.example") }
        XCTAssertEqual(provider.calls, 2)
        let refreshed = try await subject.resolve("r.example")
        XCTAssertEqual(refreshed.addresses.map(\.description), ["198.51.100.2"])
        XCTAssertTrue(refreshed.fromCache)
        XCTAssertEqual(refreshed.ttl, 100)
    }

    func testStaleServedOnlyWhenRefreshFails() async throws {
        let clock = HTTPDNSManualClock()
        let provider = FakeResolver("p", .answer(["198.51.100.1"], ttl: 60))
        let local = FakeResolver("system", .fail(.timedOut))
        let subject = engine([provider], local: local, clock: clock)
        _ = try await subject.resolve("s.example")
        clock.advance(by: 61)
        // Upstream healthy: an expired entry is replaced, never served stale.
        provider.set(.answer(["198.51.100.2"], ttl: 60))
        let fresh = try await subject.resolve("s.example")
        XCTAssertFalse(fresh.isStale)
        XCTAssertEqual(fresh.addresses.map(\.description), ["198.51.100.2"])
        clock.advance(by: 61)
        provider.set(.fail(.transport))
        let stale = try await subject.resolve("s.example")
        XCTAssertTrue(stale.isStale)
        XCTAssertEqual(stale.ttl, 30)
        XCTAssertEqual(stale.addresses.map(\.description), ["198.51.100.2"])
        let callsAfterFailure = provider.calls
        clock.advance(by: 10)
        let again = try await subject.resolve("s.example")
        XCTAssertTrue(again.isStale)
        XCTAssertEqual(provider.calls, callsAfterFailure, "no retry within the 30 s stale window")
        clock.advance(by: 21)
        _ = try await subject.resolve("s.example")
        XCTAssertEqual(provider.calls, callsAfterFailure + 1, "retried after 30 s")
    }

    func testStaleAgeIsBounded() async throws {
        let clock = HTTPDNSManualClock()
        let provider = FakeResolver("p", .answer(["198.51.100.1"], ttl: 60))
        let subject = engine([provider], clock: clock) {
            $0.cache.policy.maximumStaleAge = 3_600
            $0.failover.httpdnsOnly = true
        }
        _ = try await subject.resolve("t.example")
        provider.set(.fail(.transport))
        clock.advance(by: 60 + 3_601)
        do {
            let answer = try await subject.resolve("t.example")
            XCTFail("served \(answer) beyond the maximum stale age")
        } catch let error as HTTPDNSError {
            XCTAssertEqual(error.code, .allAttemptsFailed)
        }
    }

    func testConcurrentLookupsCoalesceIntoOneUpstreamRequest() async throws {
        let provider = FakeResolver("p", .answer(["198.51.100.1"], ttl: 60), delay: 0.2)
        let subject = engine([provider])
        let answers = try await withThrowingTaskGroup(of: HTTPDNSAnswer.self) { group in
            for _ in 0..<50 {
                group.addTask { try await subject.resolve("c.example") }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        XCTAssertEqual(answers.count, 50)
        XCTAssertTrue(answers.allSatisfy { $0.addresses.map(\.description) == ["198.51.100.1"] })
        XCTAssertEqual(provider.calls, 1)
        XCTAssertEqual(subject.upstreamLookupCount, 1)
    }

    /// A lookup that missed the cache just as the flight for its name finished must take the stored
    /// answer, not start a second upstream request (an instant provider makes that window wide).
    func testALookupRacingAFinishingFlightDoesNotAskAgain() async throws {
        for round in 0..<60 {
            let provider = FakeResolver("p", .answer(["198.51.100.1"], ttl: 600))
            let subject = engine([provider])
            let names = (0..<10).map { "race\(round)-\($0).example" }
            try await withThrowingTaskGroup(of: Void.self) { group in
                for index in 0..<1_000 {
                    group.addTask { _ = try await subject.resolve(names[index % names.count]) }
                }
                try await group.waitForAll()
            }
            XCTAssertEqual(provider.calls, names.count, "round \(round)")
            XCTAssertEqual(subject.upstreamLookupCount, names.count, "round \(round)")
        }
    }

    func testLRUBound() async throws {
        let provider = FakeResolver("p", .answer(["198.51.100.1"], ttl: 600))
        let subject = engine([provider]) { $0.cache.policy.capacity = 3 }
        for name in ["a", "b", "c"] { _ = try await subject.resolve("\(name).example") }
        _ = try await subject.resolve("a.example")  // a is now most recently used
        _ = try await subject.resolve("d.example")  // evicts b
        XCTAssertNotNil(subject.cachedAnswer("a.example"))
        XCTAssertNil(subject.cachedAnswer("b.example"))
        XCTAssertNotNil(subject.cachedAnswer("c.example"))
        XCTAssertNotNil(subject.cachedAnswer("d.example"))
    }

    func testInvalidateDropsEntry() async throws {
        let provider = FakeResolver("p", .answer(["198.51.100.1"], ttl: 600))
        let subject = engine([provider])
        _ = try await subject.resolve("i.example")
        subject.invalidate("I.example.")
        XCTAssertNil(subject.cachedAnswer("i.example"))
    }

    func testUnauthorizedDropsCachedEntry() async throws {
        let clock = HTTPDNSManualClock()
        let provider = FakeResolver("p", .answer(["198.51.100.1"], ttl: 60))
        let subject = engine([provider], clock: clock) { $0.failover.httpdnsOnly = true }
        _ = try await subject.resolve("u.example")
        clock.advance(by: 61)
        provider.set(.fail(.unauthorized))
        // The chain wraps the 401 in allAttemptsFailed, so the stale entry may still be served once;
        // what must not happen is a fresh hit afterwards.
        _ = try? await subject.resolve("u.example")
        XCTAssertNil(subject.cachedAnswer("u.example"))
    }

    func testPreResolutionFillsTheCache() async throws {
        let provider = FakeResolver("p", .answer(["198.51.100.1"], ttl: 600))
        let subject = engine([provider]) { $0.cache.preResolve = ["pre1.example", "pre2.example"] }
        try await waitUntil { subject.cachedAnswer("pre1.example") != nil && subject.cachedAnswer("pre2.example") != nil }
        XCTAssertEqual(provider.calls, 2)
    }
}

func temporaryPath(_ name: String) -> String {
    NSTemporaryDirectory() + "httpdns-\(UUID().uuidString)-\(name)"
}

/// Polls `condition` for up to five seconds (for work the engine does in the background).
func waitUntil(_ condition: @Sendable () -> Bool, file: StaticString = #filePath, line: UInt = #line) async throws {
    let deadline = ContinuousClock.now.advanced(by: .seconds(5))
    while !condition() {
        if ContinuousClock.now > deadline {
            XCTFail("condition not met within 5 s", file: file, line: line)
            return
        }
        try await Task.sleep(for: .milliseconds(10))
    }
}

/// Answers 192.0.2.1 for 203.0.113.0/24, 192.0.2.2 for 198.51.100.0/24 and 192.0.2.99 without a
/// subnet (the task-local subnet a lookup runs under).
final class SubnetEchoResolver: HTTPDNSResolver {
    static let addresses = ["192.0.2.1", "192.0.2.2"]
    let name = "subnet-echo"
    let calls = HTTPDNSLock(0)

    func resolve(_ host: String, family: HTTPDNSAddressFamily) async throws -> HTTPDNSRecordSet {
        calls.withLock { $0 += 1 }
        let text: String
        switch HTTPDNSClientSubnet.current?.address.description {
        case "203.0.113.0": text = Self.addresses[0]
        case "198.51.100.0": text = Self.addresses[1]
        default: text = "192.0.2.99"
        }
        return HTTPDNSRecordSet(host: host, ipv4: [HTTPDNSIPAddress(text)!], ipv6: [], ttl: 300)
    }
}
