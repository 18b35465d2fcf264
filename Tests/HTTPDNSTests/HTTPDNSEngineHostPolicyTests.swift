import HTTPDNS
import HTTPDNSCore
import XCTest

/// Exclusions in the host policy and policy updates at run time.
final class HTTPDNSEngineHostPolicyTests: XCTestCase {
    func testPolicyExclusionsWinOverInclusions() {
        let policy = HTTPDNSHostPolicy(["*", "!*.corp.example", "!login.example.com"])
        XCTAssertTrue(policy.protects("api.example.com"))
        XCTAssertFalse(policy.protects("login.example.com"))
        XCTAssertFalse(policy.protects("LOGIN.example.com."))
        XCTAssertFalse(policy.protects("wiki.corp.example"))
        XCTAssertFalse(policy.protects("a.b.corp.example"))
        XCTAssertTrue(policy.protects("corp.example"), "a wildcard exclusion does not cover its apex either")
        let listed = HTTPDNSHostPolicy(["*.example.com"], excluding: ["pay.example.com", "*.internal.example.com"])
        XCTAssertTrue(listed.protects("www.example.com"))
        XCTAssertFalse(listed.protects("pay.example.com"))
        XCTAssertFalse(listed.protects("db.internal.example.com"))
        XCTAssertFalse(HTTPDNSHostPolicy(["api.example.com", "!api.example.com"]).protects("api.example.com"))
        XCTAssertFalse(HTTPDNSHostPolicy(["*", "!*"]).protects("api.example.com"))
        XCTAssertNotEqual(HTTPDNSHostPolicy(["*"]), HTTPDNSHostPolicy(["*", "!a.example"]))
    }

    func testPolicyUpdatedAtRunTime() async throws {
        let subject = engine([FakeResolver("p", .answer(["198.51.100.1"], ttl: 60))]) {
            $0.protectedHosts = HTTPDNSHostPolicy(["*.example.com"])
        }
        XCTAssertTrue(subject.protects("api.example.com"))
        XCTAssertFalse(subject.protects("api.example.org"))
        subject.updatePolicy(HTTPDNSHostPolicy(["*.example.org"], excluding: ["pay.example.org"]))
        XCTAssertFalse(subject.protects("api.example.com"))
        XCTAssertTrue(subject.protects("api.example.org"))
        XCTAssertFalse(subject.protects("pay.example.org"))
        XCTAssertEqual(subject.protectedHosts, HTTPDNSHostPolicy(["*.example.org"], excluding: ["pay.example.org"]))
        XCTAssertEqual(subject.configuration.protectedHosts, HTTPDNSHostPolicy(["*.example.com"]), "the configuration keeps the initial policy")
    }

    func testPolicyUpdatesRaceWithReadersSafely() async {
        let subject = engine([FakeResolver("p", .answer(["198.51.100.1"], ttl: 60))])
        let a = HTTPDNSHostPolicy(["*"]), b = HTTPDNSHostPolicy(["*", "!x.example"])
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                for index in 0..<2_000 { subject.updatePolicy(index.isMultiple(of: 2) ? a : b) }
            }
            for _ in 0..<2 {
                group.addTask {
                    for _ in 0..<2_000 { XCTAssertTrue(subject.protects("y.example")) }
                }
            }
        }
    }
}

/// The per-host TTL hook (Alibaba's `HttpdnsTTLDelegate`).
final class HTTPDNSEngineTTLHookTests: XCTestCase {
    func testTTLHookChoosesEachHostsTTL() async throws {
        let clock = HTTPDNSManualClock()
        let provider = FakeResolver("p", .answer(["198.51.100.1"], ttl: 300))
        let proposals = HTTPDNSLock<[String]>([])
        let subject = engine([provider], clock: clock) {
            $0.cache.ttlPolicy = { host, proposed in
                proposals.withLock { $0.append("\(host) \(proposed)") }
                return host == "short.example" ? .seconds(10) : proposed * 2
            }
        }
        let short = try await subject.resolve("short.example")
        XCTAssertEqual(short.ttl, 10, "the hook may go below the 60 s floor")
        let long = try await subject.resolve("long.example")
        XCTAssertEqual(long.ttl, 600)
        XCTAssertEqual(proposals.withLock { $0 }, ["short.example 300.0 seconds", "long.example 300.0 seconds"])
        clock.advance(by: 11)
        _ = try await subject.resolve("short.example")
        XCTAssertEqual(provider.calls, 3, "short.example expired after its 10 s")
        clock.advance(by: 100)
        let cached = try await subject.resolve("long.example")
        XCTAssertTrue(cached.fromCache)
    }

    func testTTLHookIsKeptWithinOneSecondAndTheCeiling() async throws {
        let provider = FakeResolver("p", .answer(["198.51.100.1"], ttl: 300))
        let subject = engine([provider]) {
            $0.cache.policy.maximumTTL = 3_600
            $0.cache.ttlPolicy = { host, _ in host.hasPrefix("zero") ? .zero : host.hasPrefix("neg") ? .seconds(-5) : .seconds(1_000_000) }
        }
        let zero = try await subject.resolve("zero.example")
        XCTAssertEqual(zero.ttl, 1)
        let negative = try await subject.resolve("neg.example")
        XCTAssertEqual(negative.ttl, 1)
        let huge = try await subject.resolve("huge.example")
        XCTAssertEqual(huge.ttl, 3_600)
    }

    func testTTLHookProposesTheClampedProviderTTL() async throws {
        let provider = FakeResolver("p", .answer(["198.51.100.1"], ttl: 5))
        let proposed = HTTPDNSLock<Duration?>(nil)
        let subject = engine([provider]) {
            $0.cache.ttlPolicy = { _, ttl in
                proposed.withLock { $0 = ttl }
                return ttl
            }
        }
        let answer = try await subject.resolve("floor.example")
        XCTAssertEqual(proposed.withLock { $0 }, .seconds(60), "the provider's 5 s after the 60 s floor")
        XCTAssertEqual(answer.ttl, 60)
    }
}
