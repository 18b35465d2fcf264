import HTTPDNS
import HTTPDNSCore
import HTTPDNSTestSupport
import XCTest

/// ``HTTPDNSEngine/networkDidChange()`` on the manual clock; the rtnetlink watcher that calls it is
/// tested in network namespaces (`NetworkChangeWatcherTests`).
final class HTTPDNSEngineNetworkChangeTests: XCTestCase {
    func testNetworkChangeDropsAnswersAndCooldownsWhenNotKeepingStale() async throws {
        let provider = FakeResolver("p", .answer(["198.51.100.1", "198.51.100.2"], ttl: 600))
        let subject = engine([provider]) { $0.network.keepsStaleAnswersOnChange = false }
        _ = try await subject.resolve("n.example")
        let first = try XCTUnwrap(HTTPDNSIPAddress("198.51.100.1"))
        subject.reportUnreachable(first)
        XCTAssertTrue(subject.isCoolingDown(first))
        let reordered = try await subject.resolve("n.example")
        XCTAssertEqual(reordered.addresses.first?.description, "198.51.100.2")
        await subject.networkDidChange().value
        XCTAssertFalse(subject.isCoolingDown(first), "cool-downs are from the old network")
        XCTAssertNil(subject.cachedAnswer("n.example"))
        let again = try await subject.resolve("n.example")
        XCTAssertFalse(again.fromCache)
        XCTAssertEqual(again.addresses.map(\.description), ["198.51.100.1", "198.51.100.2"])
        XCTAssertEqual(provider.calls, 2)
    }

    func testNetworkChangeKeepsStaleAnswersAsALastResortByDefault() async throws {
        XCTAssertTrue(HTTPDNSConfiguration.Network().keepsStaleAnswersOnChange, "the documented default")
        let provider = FakeResolver("p", .answer(["198.51.100.1"], ttl: 600))
        let local = FakeResolver("local", .answer(["203.0.113.9"], ttl: 60))
        let subject = engine([provider], local: local)
        _ = try await subject.resolve("k.example")
        await subject.networkDidChange().value
        XCTAssertNil(subject.cachedAnswer("k.example"), "no longer fresh")
        // Upstream works on the new network: its answer replaces the kept one.
        provider.set(.answer(["198.51.100.7"], ttl: 600))
        let renewed = try await subject.resolve("k.example")
        XCTAssertFalse(renewed.isStale)
        XCTAssertEqual(renewed.addresses.map(\.description), ["198.51.100.7"])
        // Nothing works on the next network: the kept answer is served stale.
        await subject.networkDidChange().value
        provider.set(.fail(.transport))
        local.set(.fail(.timedOut))
        let lastResort = try await subject.resolve("k.example")
        XCTAssertTrue(lastResort.isStale)
        XCTAssertEqual(lastResort.addresses.map(\.description), ["198.51.100.7"])
    }

    func testNetworkChangeExpiresKeptAnswersEvenAfterTheClockWentBack() async throws {
        let clock = HTTPDNSManualClock()
        let provider = FakeResolver("p", .answer(["198.51.100.1"], ttl: 600))
        let subject = engine([provider], clock: clock)
        _ = try await subject.resolve("b.example")
        clock.advance(by: -100)
        await subject.networkDidChange().value
        XCTAssertNil(subject.cachedAnswer("b.example"), "an answer stored 'in the future' is expired all the same")
        _ = try await subject.resolve("b.example")
        XCTAssertEqual(provider.calls, 2)
    }

    func testNetworkChangeForgetsConnectTimes() async throws {
        let subject = engine([FakeResolver("p", .answer(["198.51.100.1"], ttl: 600))])
        let slow = try XCTUnwrap(HTTPDNSIPAddress("198.51.100.1")), fast = try XCTUnwrap(HTTPDNSIPAddress("198.51.100.2"))
        subject.recordConnectTime(slow, .milliseconds(400))
        subject.recordConnectTime(fast, .milliseconds(5))
        XCTAssertEqual(subject.connectOrder([slow, fast], unknown: .milliseconds(100)), [fast, slow])
        await subject.networkDidChange().value
        XCTAssertNil(subject.connectTimeEstimate(fast), "connect times describe the old network's paths")
        XCTAssertEqual(subject.connectOrder([slow, fast], unknown: .milliseconds(100)), [slow, fast])
    }

    func testNetworkChangeProviderCooldownsAreCleared() async throws {
        let first = FakeResolver("first", .fail(.transport))
        let second = FakeResolver("second", .answer(["198.51.100.1"], ttl: 600))
        let subject = engine([first, second])
        _ = try await subject.resolve("c.example")
        XCTAssertEqual(first.calls, 1)
        _ = try await subject.resolve("d.example")
        XCTAssertEqual(first.calls, 1, "the failed provider cools down")
        await subject.networkDidChange().value
        first.set(.answer(["198.51.100.2"], ttl: 600))
        let answer = try await subject.resolve("e.example")
        XCTAssertEqual(answer.source, "first", "asked first again on the new network")
    }

    func testNetworkChangeRerunsPreResolution() async throws {
        let provider = FakeResolver("p", .answer(["198.51.100.1"], ttl: 600))
        let subject = engine([provider]) {
            $0.cache.preResolve = ["pre.example"]
            $0.network.keepsStaleAnswersOnChange = false
        }
        try await waitUntil { subject.cachedAnswer("pre.example") != nil }
        XCTAssertEqual(provider.calls, 1)
        provider.set(.answer(["198.51.100.2"], ttl: 600))
        await subject.networkDidChange().value
        XCTAssertEqual(provider.calls, 2)
        XCTAssertEqual(subject.cachedAnswer("pre.example")?.addresses.map(\.description), ["198.51.100.2"])
    }

    func testNetworkChangeWithoutPreResolutionLeavesTheCacheEmpty() async throws {
        let provider = FakeResolver("p", .answer(["198.51.100.1"], ttl: 600))
        let subject = engine([provider]) {
            $0.cache.preResolve = ["pre.example"]
            $0.network.preResolvesOnChange = false
            $0.network.keepsStaleAnswersOnChange = false
        }
        try await waitUntil { subject.cachedAnswer("pre.example") != nil }
        await subject.networkDidChange().value
        XCTAssertEqual(provider.calls, 1)
        XCTAssertNil(subject.cachedAnswer("pre.example"))
    }

    /// The lookup is held at a gate across the whole change, so it is certainly in flight then (a
    /// 300 ms delay could end before a slow change did, and the test would pass without the case).
    func testNetworkChangeLookupInFlightAnswersButDoesNotStore() async throws {
        let gate = TestGate()
        let provider = FakeResolver("p", .answer(["198.51.100.1"], ttl: 600), gate: gate)
        let subject = engine([provider]) { $0.network.keepsStaleAnswersOnChange = false }
        async let old = subject.resolve("f.example")
        try await waitUntil { gate.waitingCount == 1 }
        await subject.networkDidChange().value
        XCTAssertEqual(gate.waitingCount, 1, "the old network's lookup is still in flight after the change")
        gate.open()
        let answer = try await old
        XCTAssertEqual(answer.addresses.map(\.description), ["198.51.100.1"], "its caller still gets it")
        XCTAssertNil(subject.cachedAnswer("f.example"), "an answer from the old network is not cached")
        _ = try await subject.resolve("f.example")
        XCTAssertEqual(provider.calls, 2)
        XCTAssertNotNil(subject.cachedAnswer("f.example"))
    }
}

/// ``HTTPDNSAddressFamily/auto`` with an injected route probe; the real probe and NAT64 discovery
/// run in network namespaces (`NAT64NamespaceTests`).
final class HTTPDNSEngineAutoFamilyTests: XCTestCase {
    private func autoEngine(
        ipv4: Bool, ipv6: Bool, provider: FamilyRecordingResolver, local: FamilyRecordingResolver
    ) -> HTTPDNSEngine {
        engine([provider], local: local) {
            $0.family = .auto
            $0.familyProbe = { (ipv4, ipv6) }
        }
    }

    func testAutoFamilyAsksForTheRoutedFamilies() async throws {
        let cases: [(ipv4: Bool, ipv6: Bool, asked: String)] = [
            (true, false, "ipv4"), (true, true, "both"), (false, false, "both"),
        ]
        for (ipv4, ipv6, asked) in cases {
            let provider = FamilyRecordingResolver("p", answers: ["a.example": ["198.51.100.1", "2001:db8::1"]])
            let local = FamilyRecordingResolver("local", answers: [:])
            let subject = autoEngine(ipv4: ipv4, ipv6: ipv6, provider: provider, local: local)
            _ = try await subject.resolve("a.example")
            XCTAssertEqual(provider.asked, ["a.example \(asked)"], "ipv4 \(ipv4) ipv6 \(ipv6)")
            XCTAssertEqual(subject.autoFamilyInUse.rawValue, asked)
            XCTAssertNil(subject.nat64Prefix)
            XCTAssertEqual(local.asked, [], "NAT64 discovery only on IPv6-only networks")
        }
    }

    func testAutoFamilyIPv6OnlyWithoutNAT64AsksForIPv6() async throws {
        let provider = FamilyRecordingResolver("p", answers: ["a.example": ["2001:db8::1"]])
        let local = FamilyRecordingResolver("local", answers: ["ipv4only.arpa": ["2001:db8::53"]])
        let subject = autoEngine(ipv4: false, ipv6: true, provider: provider, local: local)
        let answer = try await subject.resolve("a.example")
        XCTAssertEqual(local.asked, ["ipv4only.arpa ipv6"])
        XCTAssertNil(subject.nat64Prefix)
        XCTAssertEqual(answer.addresses.map(\.description), ["2001:db8::1"])
        XCTAssertEqual(subject.autoFamilyInUse, .ipv6)
        XCTAssertEqual(provider.asked, ["a.example ipv6"])
    }

    func testNAT64EngineSynthesizesIPv6FromIPv4Answers() async throws {
        let provider = FamilyRecordingResolver("p", answers: [
            "v4only.example": ["198.51.100.10", "198.51.100.11"],
            "dual.example": ["198.51.100.12", "2001:db8::12"],
        ])
        let local = FamilyRecordingResolver("local", answers: ["ipv4only.arpa": ["64:ff9b::c000:aa", "64:ff9b::c000:ab"]])
        let subject = autoEngine(ipv4: false, ipv6: true, provider: provider, local: local)
        let v4only = try await subject.resolve("v4only.example")
        XCTAssertEqual(subject.nat64Prefix, .wellKnown)
        XCTAssertEqual(v4only.addresses.map(\.description), ["64:ff9b::c633:640a", "64:ff9b::c633:640b"])
        let dual = try await subject.resolve("dual.example")
        XCTAssertEqual(dual.addresses.map(\.description), ["2001:db8::12", "64:ff9b::c633:640c"], "native IPv6 first")
        XCTAssertEqual(provider.asked, ["v4only.example both", "dual.example both"])
        let cached = try await subject.resolve("v4only.example")
        XCTAssertTrue(cached.fromCache)
        XCTAssertEqual(cached.addresses.map(\.description), ["64:ff9b::c633:640a", "64:ff9b::c633:640b"])
        // Addresses from elsewhere (the client's block-redirect endpoint) get the same treatment.
        let redirected = subject.usableAddresses([try XCTUnwrap(HTTPDNSIPAddress("198.51.100.20"))], family: nil)
        XCTAssertEqual(redirected.map(\.description), ["64:ff9b::c633:6414"])
        // The user's own pins to private space have no NAT64 form: they stay as they are.
        let pins = HTTPDNSStaticResolver(["intranet.example": [try XCTUnwrap(HTTPDNSIPAddress("10.0.0.7"))]])
        let pinned = engine([pins], local: local) {
            $0.family = .auto
            $0.familyProbe = { (false, true) }
        }
        let intranet = try await pinned.resolve("intranet.example")
        XCTAssertEqual(pinned.nat64Prefix, .wellKnown)
        XCTAssertEqual(intranet.addresses.map(\.description), ["10.0.0.7"])
        // An explicit IPv4 lookup gets what it asked for.
        let explicit = try await subject.resolve("v4only.example", family: .ipv4)
        XCTAssertEqual(explicit.addresses.map(\.description), ["198.51.100.10", "198.51.100.11"])
    }
}
