import Foundation
import HTTPDNS
import HTTPDNSCore
import XCTest

/// `resolveBypassingCache(_:family:)`: the client's "ask again before giving up" (seed 002).
final class HTTPDNSEngineReaskTests: XCTestCase {
    func testBypassAsksUpstreamDespiteAFreshEntryAndStoresTheNewAnswer() async throws {
        let provider = FakeResolver("p", .answer(["198.51.100.1"], ttl: 300))
        let subject = engine([provider])
        _ = try await subject.resolve("a.example")
        provider.set(.answer(["198.51.100.2"], ttl: 300))
        let cached = try await subject.resolve("a.example")
        XCTAssertTrue(cached.fromCache)
        XCTAssertEqual(cached.addresses.map(\.description), ["198.51.100.1"], "the cache still answers the old set")
        XCTAssertEqual(provider.calls, 1)

        let fresh = try await subject.resolveBypassingCache("a.example")
        XCTAssertEqual(provider.calls, 2, "the fresh entry did not stop the lookup")
        XCTAssertFalse(fresh.fromCache)
        XCTAssertEqual(fresh.addresses.map(\.description), ["198.51.100.2"])
        let after = try await subject.resolve("A.Example.")
        XCTAssertTrue(after.fromCache)
        XCTAssertEqual(after.addresses.map(\.description), ["198.51.100.2"], "the new set replaced the cached one")
        XCTAssertEqual(provider.calls, 2)
    }

    func testConcurrentBypassesShareOneLookup() async throws {
        let provider = FakeResolver("p", .answer(["198.51.100.1"], ttl: 300), delay: 0.2)
        let subject = engine([provider])
        _ = try await subject.resolve("c.example")
        async let first = subject.resolveBypassingCache("c.example")
        async let second = subject.resolveBypassingCache("c.example")
        _ = try await (first, second)
        XCTAssertEqual(provider.calls, 2, "one lookup for the two callers, after the first resolve")
        XCTAssertEqual(provider.mostInFlight, 1)
    }

    func testAFailedBypassLeavesTheCachedAnswer() async throws {
        let provider = FakeResolver("p", .answer(["198.51.100.1"], ttl: 300))
        let subject = engine([provider]) { $0.failover.httpdnsOnly = true }
        _ = try await subject.resolve("f.example")
        provider.set(.fail(.timedOut))
        do {
            _ = try await subject.resolveBypassingCache("f.example")
            XCTFail("the failure must be thrown, not a cached or stale answer served")
        } catch let error as HTTPDNSError {
            XCTAssertEqual(error.code, .allAttemptsFailed)
        }
        let cached = try await subject.resolve("f.example")
        XCTAssertTrue(cached.fromCache)
        XCTAssertEqual(cached.addresses.map(\.description), ["198.51.100.1"])
    }

    func testLiteralsAndStaticEntriesNeverGoUpstream() async throws {
        let provider = FakeResolver("p", .answer(["198.51.100.1"], ttl: 300))
        let subject = engine([provider]) { $0.staticEntries = ["pinned.example": [HTTPDNSIPAddress("192.0.2.9")!]] }
        let literal = try await subject.resolveBypassingCache("192.0.2.1")
        XCTAssertEqual(literal.addresses.map(\.description), ["192.0.2.1"])
        let pinned = try await subject.resolveBypassingCache("pinned.example")
        XCTAssertEqual(pinned.addresses.map(\.description), ["192.0.2.9"])
        XCTAssertEqual(provider.calls, 0)
    }
}
