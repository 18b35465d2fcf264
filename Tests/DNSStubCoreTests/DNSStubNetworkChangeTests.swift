import DNSWire
import DNSStubCore
import HTTPDNSCore
import XCTest

/// What a network change does to the stub's state (``DNSStubNetworkChange``), with an explicit `now`.
final class DNSStubNetworkChangeTests: XCTestCase {
    private typealias F = StubFixture

    private func request(_ host: String, _ type: DNSRecordType = .A) throws -> DNSStubRequest {
        try XCTUnwrap(F.request(F.query(host, type)))
    }

    private func negative(_ rcode: DNSResponseCode) -> DNSStubResponse {
        DNSStubResponse(rcode: rcode, authorities: [F.soa(ttl: 3600, minimum: 300)])
    }

    func testPositiveAnswersStayFreshAndNegativeOnesExpireButStayStale() throws {
        var cache = DNSStubCache()
        let positive = try request("www.example.com")
        let any = try request("any.example.com", .ANY)
        let nxdomain = try request("gone.example.com")
        let nodata = try request("www.example.com", .AAAA)
        let emptyAny = try request("empty.example.com", .ANY)
        cache.store(DNSStubResponse(answers: [F.a("www.example.com", 1)]), for: positive, now: 0)
        cache.store(DNSStubResponse(answers: [F.a("any.example.com", 2)]), for: any, now: 0)
        cache.store(negative(.nameError), for: nxdomain, now: 0)
        cache.store(negative(.noError), for: nodata, now: 0)
        cache.store(negative(.noError), for: emptyAny, now: 0)
        var health = DNSStubUpstreamHealth()
        var rankings: [DNSStubUpstreamRanking] = []

        let change = DNSStubNetworkChange.apply(cache: &cache, health: &health, rankings: &rankings, now: 100)
        XCTAssertEqual(change.negativeAnswersExpired, 3, "NXDOMAIN, NODATA, and an ANY with nothing")
        XCTAssertEqual(cache.count, 5, "nothing dropped")
        XCTAssertEqual(cache.lookup(positive, now: 100)?.response.answers.map(\.ttl), [200], "kept, its TTL still counting down")
        XCTAssertEqual(cache.lookup(any, now: 100)?.isStale, false)
        for expired in [nxdomain, nodata, emptyAny] {
            XCTAssertNil(cache.lookup(expired, now: 100), "\(expired.question.name): asked again")
            let stale = try XCTUnwrap(cache.lookup(expired, now: 100, upstreamFailed: true), "\(expired.question.name)")
            XCTAssertTrue(stale.isStale, "served stale while the upstreams fail")
        }
        XCTAssertEqual(cache.lookup(try request("gone.example.com", .TXT), now: 100, upstreamFailed: true)?.response.extendedError?.infoCode,
                       .staleNXDOMAIN, "an NXDOMAIN still covers every type, stale")
        XCTAssertNotNil(cache.lookup(nxdomain, now: 100 + 86_400, upstreamFailed: true), "the stale window counts from the change")
    }

    func testExpiringKeepsTheLeastRecentlyUsedOrder() throws {
        var cache = DNSStubCache()
        let names = ["a.example.com", "b.example.com", "c.example.com", "d.example.com"]
        for (index, name) in names.enumerated() {
            let response = index.isMultiple(of: 2) ? negative(.nameError) : DNSStubResponse(answers: [F.a(name, 1)])
            cache.store(response, for: try request(name), now: Double(index))
        }
        let before = cache.keys
        XCTAssertEqual(cache.expireNegativeAnswers(now: 10), 2)
        XCTAssertEqual(cache.keys, before)
        XCTAssertEqual(cache.expireNegativeAnswers(now: 11), 0, "already expired ones are not counted again")
    }

    func testUpstreamsAreNoLongerDownAndUnmeasured() {
        var cache = DNSStubCache()
        var health = DNSStubUpstreamHealth()
        health.recordFailure(now: 10)
        var ranking = DNSStubUpstreamRanking(count: 2)
        ranking.recordSuccess(0, rtt: 0.2, now: 10)
        ranking.recordFailure(1, now: 10)
        var configuration = DNSStubUpstreamRanking.Configuration()
        configuration.initialRTT = 0.01
        var routeRanking = DNSStubUpstreamRanking(count: 1, configuration: configuration)
        routeRanking.recordFailure(0, elapsed: 5, now: 10)
        var rankings = [ranking, routeRanking]
        XCTAssertTrue(health.isDown(now: 11))

        let change = DNSStubNetworkChange.apply(cache: &cache, health: &health, rankings: &rankings, now: 11)
        XCTAssertEqual(change.rankingsReset, 2)
        XCTAssertEqual(change.negativeAnswersExpired, 0)
        XCTAssertFalse(health.isDown(now: 11), "the next query asks the upstreams")
        XCTAssertEqual(health.configuration, DNSStubUpstreamHealth.Configuration())
        XCTAssertEqual(rankings.map(\.entries.count), [2, 1])
        XCTAssertTrue(rankings.allSatisfy { $0.entries.allSatisfy { $0.smoothedRTT == nil && $0.failureScore == 0 } }, "no RTT, no failure")
        XCTAssertEqual(rankings[0].order(now: 11), [0, 1], "the configured order again")
        XCTAssertEqual(rankings[1].configuration.initialRTT, 0.01, "the configuration is kept")
    }
}
