import DNSStubCore
import DNSWire
import Foundation
import HTTPDNS
import HTTPDNSCore
@testable import HTTPDNSStub
import HTTPDNSTestSupport
import HTTPDNSTransport
import XCTest

/// ``DNSStubResolver/networkDidChange(renewing:)`` without sockets: upstreams marked down while the
/// link was down are asked at the next query, the ranking starts over, and the wire cache keeps its
/// positive answers (the transport's new connections: ``HTTPTransportRenewTests``).
final class DNSStubResolverNetworkTests: XCTestCase {
    typealias Upstream = DNSStubResolverStaleTests.ScriptedUpstream

    private func resolver(_ upstreams: [Upstream]) -> DNSStubResolver {
        var engineConfiguration = HTTPDNSConfiguration(resolvers: [])
        engineConfiguration.protectedHosts = HTTPDNSHostPolicy(["none.invalid"])
        return DNSStubResolver(engine: HTTPDNSEngine(configuration: engineConfiguration), upstreams: upstreams)
    }

    private func request(_ name: String) throws -> DNSStubRequest {
        DNSStubRequest(id: 7, question: DNSQuestion(name: try DNSName(name), type: .MX), edns: .init())
    }

    func testUpstreamsMarkedDownAreAskedAtOnceAfterTheChange() async throws {
        let upstream = Upstream()
        let resolver = resolver([upstream])
        let query = try request("mail.example.test")
        // Learnt on the old network, then the link went down: the answer expires, the upstream fails.
        let stored = DNSStubResponse(answers: [
            DNSRecord(name: query.question.name, ttl: 1, data: .mx(preference: 10, exchange: try DNSName("mx1.example.test"))),
        ])
        resolver.cache.withLock { _ = $0.store(stored, for: query, now: resolver.now - 10) }
        upstream.state.withLock { $0.fails = true }
        _ = await resolver.answer(query)
        XCTAssertTrue(resolver.health.withLock { $0.isDown(now: resolver.now) })
        let failedRanking = resolver.upstreams.currentRanking
        XCTAssertGreaterThan(failedRanking.failureScore(0, now: resolver.now), 0)
        let calls = upstream.calls

        // The link comes back: a new network.
        upstream.state.withLock { $0.fails = false }
        let generation = resolver.generation.load(ordering: .acquiring)
        let change = resolver.networkDidChange(renewing: [HTTPTransport()])
        XCTAssertEqual(change.rankingsReset, 1)
        XCTAssertEqual(resolver.generation.load(ordering: .acquiring), generation + 1, "the UDP thread's packet cache starts over")
        XCTAssertFalse(resolver.health.withLock { $0.isDown(now: resolver.now) }, "no longer down")
        XCTAssertEqual(resolver.upstreams.currentRanking.failureScore(0, now: resolver.now), 0, "the ranking starts over")

        // The next query asks the upstream at once (down, it would have got the stale answer).
        let fresh = await resolver.answer(query)
        XCTAssertNil(fresh.extendedError, "fresh, not stale")
        XCTAssertEqual(fresh.answers.map(\.data), [.mx(preference: 10, exchange: try DNSName("mx2.example.test"))])
        XCTAssertEqual(upstream.calls, calls + 1)
    }

    func testNegativeAnswersAreAskedAgainAndPositiveOnesKept() async throws {
        let upstream = Upstream()
        upstream.state.withLock { $0.fails = false }
        let resolver = resolver([upstream])
        let kept = try request("mail.example.test")
        _ = await resolver.answer(kept)
        let gone = try request("gone.example.test")
        let soa = DNSRecord(
            name: try DNSName("example.test"), ttl: 3600,
            data: .soa(DNSSOA(primaryServer: try DNSName("ns.example.test"), responsible: try DNSName("h.example.test"), serial: 1, refresh: 1, retry: 1, expire: 1, minimum: 300)))
        resolver.cache.withLock { _ = $0.store(DNSStubResponse(rcode: .nameError, authorities: [soa]), for: gone, now: resolver.now) }
        let cached = await resolver.answer(gone)
        XCTAssertEqual(cached.rcode, .nameError, "from the cache")
        XCTAssertEqual(upstream.calls, 1)

        let changes = resolver.cacheChanges.withLock { $0 }
        XCTAssertEqual(resolver.networkDidChange().negativeAnswersExpired, 1)
        XCTAssertGreaterThan(resolver.cacheChanges.withLock { $0 }, changes, "the cache file is written again")
        _ = await resolver.answer(kept)
        XCTAssertEqual(upstream.calls, 1, "a positive answer is still fresh")
        let asked = await resolver.answer(gone)
        XCTAssertEqual(asked.rcode, .noError, "the name that failed on the old network resolves on the new one")
        XCTAssertEqual(upstream.calls, 2)
    }
}
