import DNSWire
import DNSStubCore
import HTTPDNSCore
import XCTest

/// The stub's wire-answer cache with an explicit `now`: countdown, negative TTLs from the SOA
/// (RFC 2308 §5), serve-stale (RFC 8767), LRU eviction and the key.
final class DNSStubCacheTests: XCTestCase {
    private typealias F = StubFixture

    private func request(_ host: String = "www.example.com", _ type: DNSRecordType = .A, edns: DNSEDNS? = nil,
                         change: (inout DNSMessage) -> Void = { _ in }) throws -> DNSStubRequest {
        try XCTUnwrap(F.request(F.query(host, type, edns: edns, change: change)))
    }

    private func negative(_ rcode: DNSResponseCode, soaTTL: UInt32 = 3600, minimum: UInt32 = 300) -> DNSStubResponse {
        DNSStubResponse(rcode: rcode, authorities: [F.soa(ttl: soaTTL, minimum: minimum)])
    }

    func testTTLsCountDownAndExpire() throws {
        var cache = DNSStubCache()
        let query = try request()
        let chain = DNSStubResponse(answers: [
            DNSRecord(name: F.name("www.example.com"), ttl: 600, data: .cname(F.name("edge.example.net"))),
            F.a("edge.example.net", 1, ttl: 300), F.a("edge.example.net", 2, ttl: 300),
        ])
        XCTAssertEqual(cache.store(chain, for: query, now: 100), 300, "the smallest TTL")
        let hit = try XCTUnwrap(cache.lookup(query, now: 160.7))
        XCTAssertFalse(hit.isStale)
        XCTAssertEqual(hit.remainingTTL, 240)
        XCTAssertEqual(hit.response.answers.map(\.ttl), [240, 240, 240], "none above the entry's TTL")
        XCTAssertEqual(hit.response.answers.map(\.data), chain.answers.map(\.data), "order and chain kept")
        XCTAssertEqual(cache.lookup(query, now: 399.9)?.response.answers.map(\.ttl), [1, 1, 1])
        XCTAssertNil(cache.lookup(query, now: 400))
        XCTAssertEqual(cache.count, 1, "kept for serve-stale")
    }

    func testPositiveTTLRules() throws {
        let cache = DNSStubCache()
        let question = try request().question
        XCTAssertEqual(cache.cacheTTL(of: DNSStubResponse(answers: [F.a("www.example.com", 1, ttl: 864_000)]), question: question), 86_400)
        XCTAssertNil(cache.cacheTTL(of: DNSStubResponse(answers: [F.a("www.example.com", 1, ttl: 0)]), question: question), "TTL 0 is not cached")
        XCTAssertNil(cache.cacheTTL(of: DNSStubResponse(answers: [F.a("www.example.com", 1, ttl: 0x8000_0000)]), question: question),
                     "RFC 2181 §8: top bit set means 0")
        let withGlue = DNSStubResponse(answers: [F.a("www.example.com", 1)], additionals: [F.a("ns.example.com", 2, ttl: 30)])
        XCTAssertEqual(cache.cacheTTL(of: withGlue, question: question), 30)
        XCTAssertNil(cache.cacheTTL(of: DNSStubResponse(answers: [F.a("www.example.com", 1)], isTruncated: true), question: question))
    }

    func testNegativeTTLFromTheSOA() throws {
        let cache = DNSStubCache()
        let question = try request().question
        // RFC 2308 §5: min(SOA TTL, SOA MINIMUM).
        XCTAssertEqual(cache.cacheTTL(of: negative(.nameError, soaTTL: 3600, minimum: 300), question: question), 300)
        XCTAssertEqual(cache.cacheTTL(of: negative(.nameError, soaTTL: 120, minimum: 300), question: question), 120)
        XCTAssertEqual(cache.cacheTTL(of: negative(.noError, soaTTL: 60, minimum: 900), question: question), 60, "NODATA")
        XCTAssertEqual(cache.cacheTTL(of: negative(.nameError, soaTTL: 0, minimum: 0), question: question), 5, "floor")
        XCTAssertEqual(cache.cacheTTL(of: negative(.nameError, soaTTL: 86400, minimum: 86400), question: question), 3600, "cap")
        XCTAssertNil(cache.cacheTTL(of: DNSStubResponse(rcode: .nameError), question: question), "no SOA: not cached")
        // NODATA after a CNAME lasts no longer than the CNAME.
        let chain = DNSStubResponse(
            answers: [DNSRecord(name: F.name("www.example.com"), ttl: 20, data: .cname(F.name("x.example.com")))],
            authorities: [F.soa()]
        )
        XCTAssertEqual(cache.cacheTTL(of: chain, question: question), 20)
    }

    func testFailuresAreNeverCached() throws {
        var cache = DNSStubCache()
        let query = try request()
        for rcode in [DNSResponseCode.serverFailure, .refused, .formatError, .notImplemented] {
            XCTAssertNil(cache.store(DNSStubResponse(rcode: rcode, authorities: [F.soa()]), for: query, now: 0))
        }
        XCTAssertNil(cache.store(.serverFailure(.networkError), for: query, now: 0))
        XCTAssertEqual(cache.count, 0)
    }

    func testNXDOMAINCoversEveryTypeAndNODATAOnlyItsOwn() throws {
        var cache = DNSStubCache()
        XCTAssertEqual(cache.store(negative(.nameError), for: try request("gone.example.com", .A), now: 0), 300)
        let other = try XCTUnwrap(cache.lookup(try request("gone.example.com", .TXT), now: 10))
        XCTAssertEqual(other.response.rcode, .nameError)
        XCTAssertEqual(other.response.authorities.map(\.ttl), [290], "the SOA says how long the negative answer lasts")
        cache.removeAll()
        XCTAssertEqual(cache.store(negative(.noError), for: try request("www.example.com", .AAAA), now: 0), 300)
        XCTAssertEqual(cache.lookup(try request("www.example.com", .AAAA), now: 1)?.response.rcode, .noError)
        XCTAssertNil(cache.lookup(try request("www.example.com", .A), now: 1))
        // An NXDOMAIN replaces the older answer of the type asked.
        cache.store(DNSStubResponse(answers: [F.a("old.example.com", 1)]), for: try request("old.example.com"), now: 0)
        cache.store(negative(.nameError), for: try request("old.example.com"), now: 10)
        XCTAssertEqual(cache.lookup(try request("old.example.com"), now: 11)?.response.rcode, .nameError)
    }

    func testServeStaleOnlyAfterAFailureAndWithinTheWindow() throws {
        var cache = DNSStubCache()
        let query = try request()
        cache.store(DNSStubResponse(answers: [F.a("www.example.com", 1, ttl: 60)]), for: query, now: 0)
        XCTAssertNil(cache.lookup(query, now: 100), "expired: ask the upstream first")
        let stale = try XCTUnwrap(cache.lookup(query, now: 100, upstreamFailed: true))
        XCTAssertTrue(stale.isStale)
        XCTAssertEqual(stale.remainingTTL, 0)
        XCTAssertEqual(stale.response.answers.map(\.ttl), [30], "RFC 8767 §4")
        XCTAssertEqual(stale.response.extendedError?.infoCode, .staleAnswer)
        XCTAssertNotNil(cache.lookup(query, now: 60 + 86_400, upstreamFailed: true))
        XCTAssertNil(cache.lookup(query, now: 60 + 86_400.5, upstreamFailed: true), "past the stale window")
        XCTAssertEqual(cache.count, 0, "and removed")

        cache.store(negative(.nameError), for: try request("gone.example.com"), now: 0)
        let staleNX = try XCTUnwrap(cache.lookup(try request("gone.example.com"), now: 1000, upstreamFailed: true))
        XCTAssertEqual(staleNX.response.extendedError?.infoCode, .staleNXDOMAIN)
        XCTAssertEqual(staleNX.response.authorities.map(\.ttl), [30])
        // A fresh answer is a fresh answer even when the upstream failed.
        cache.store(DNSStubResponse(answers: [F.a("www.example.com", 2)]), for: query, now: 1000)
        XCTAssertEqual(cache.lookup(query, now: 1001, upstreamFailed: true)?.isStale, false)
    }

    func testStaleAnswerIsSentWithItsExtendedError() throws {
        var cache = DNSStubCache()
        let query = try request(edns: DNSEDNS())
        cache.store(DNSStubResponse(answers: [F.a("www.example.com", 1, ttl: 60)]), for: query, now: 0)
        let stale = try XCTUnwrap(cache.lookup(query, now: 100, upstreamFailed: true))
        let answer = try XCTUnwrap(F.decode(DNSStubFront().encode(stale.response, for: query)))
        XCTAssertEqual(answer.rcode, .noError)
        XCTAssertEqual(answer.edns.flatMap { DNSExtendedError.first(in: $0.options) }?.infoCode, .staleAnswer)
    }

    func testLeastRecentlyUsedIsEvicted() throws {
        var configuration = DNSStubCache.Configuration()
        configuration.capacity = 2
        var cache = DNSStubCache(configuration: configuration)
        let (a, b, c) = (try request("a.example.com"), try request("b.example.com"), try request("c.example.com"))
        cache.store(DNSStubResponse(answers: [F.a("a.example.com", 1)]), for: a, now: 0)
        cache.store(DNSStubResponse(answers: [F.a("b.example.com", 2)]), for: b, now: 1)
        XCTAssertNotNil(cache.lookup(a, now: 2))
        cache.store(DNSStubResponse(answers: [F.a("c.example.com", 3)]), for: c, now: 3)
        XCTAssertEqual(cache.count, 2)
        XCTAssertNil(cache.lookup(b, now: 4))
        XCTAssertNotNil(cache.lookup(a, now: 4))
        XCTAssertNotNil(cache.lookup(c, now: 4))
        XCTAssertEqual(cache.keys.map(\.name), [c.question.name, a.question.name])
    }

    func testKeyIgnoresCaseButNotDOOrCDOrType() throws {
        var cache = DNSStubCache()
        cache.store(DNSStubResponse(answers: [F.a("www.example.com", 1)]), for: try request("www.example.com"), now: 0)
        let shouting = try request("WWW.EXAMPLE.COM")
        let hit = try XCTUnwrap(cache.lookup(shouting, now: 1))
        // The question (and so its case) comes from the request, not the cache.
        let bytes = DNSStubFront().encode(hit.response, for: shouting)
        XCTAssertEqual(Array(bytes[12..<29]), Array(F.query("WWW.EXAMPLE.COM")[12..<29]))
        XCTAssertNil(cache.lookup(try request(edns: DNSEDNS(dnssecOK: true)), now: 1), "DO")
        XCTAssertNil(cache.lookup(try request { $0.checkingDisabled = true }, now: 1), "CD")
        XCTAssertNil(cache.lookup(try request("www.example.com", .AAAA), now: 1), "type")
    }

    func testKeepsAuthenticDataButNotTheUpstreamsExtendedError() throws {
        var cache = DNSStubCache()
        let query = try request(edns: DNSEDNS(dnssecOK: true))
        cache.store(DNSStubResponse(answers: [F.a("www.example.com", 1)], authenticData: true,
                                    extendedError: DNSExtendedError(.other, "once")), for: query, now: 0)
        let hit = try XCTUnwrap(cache.lookup(query, now: 1))
        XCTAssertTrue(hit.response.authenticData)
        XCTAssertNil(hit.response.extendedError)
    }
}
