import DNSWire
import DNSStubCore
import HTTPDNSCore
import XCTest

/// The stub's UDP packet cache (bench row 11c): a repeat of the same query bytes gets the same
/// answer with its own ID, for at most the lifetime and never past the smallest TTL less a second.
final class DNSStubPacketCacheTests: XCTestCase {
    private typealias Cache = DNSStubPacketCache<String>

    /// The answer the stub encodes for `query` with `response`.
    private func answer(_ query: [UInt8], _ response: DNSStubResponse) throws -> [UInt8] {
        let request = try XCTUnwrap(StubFixture.request(query))
        return response.encode(for: request)
    }

    func testARepeatGetsTheSameAnswerWithItsOwnID() throws {
        var cache = Cache()
        let first = StubFixture.query("www.example.com", id: 1, edns: DNSEDNS(udpPayloadSize: 1232))
        let stored = try answer(first, DNSStubResponse(answers: [StubFixture.a("www.example.com", 7)]))
        cache.store(first[...], answer: stored, now: 10, source: "engine")

        let again = StubFixture.query("www.example.com", id: 0xABCD, edns: DNSEDNS(udpPayloadSize: 1232))
        let hit = try XCTUnwrap(cache.answer(again[...], now: 10.5))
        XCTAssertEqual(hit.source, "engine")
        XCTAssertEqual(Array(hit.answer[0..<2]), [0xAB, 0xCD])
        XCTAssertEqual(Array(hit.answer[2...]), Array(stored[2...]))
        let message = try XCTUnwrap(StubFixture.decode(hit.answer))
        XCTAssertEqual(message.id, 0xABCD)
        XCTAssertEqual(message.answers.first?.data, .a([192, 0, 2, 7]))
        XCTAssertEqual(cache.hits, 1)
    }

    func testAnyOtherByteIsAnotherQuery() throws {
        var cache = Cache()
        let query = StubFixture.query("www.example.com", id: 1)
        cache.store(query[...], answer: try answer(query, DNSStubResponse(answers: [StubFixture.a("www.example.com", 7)])), now: 0, source: "engine")
        // The name's case, the type, the EDNS record, the DO bit: each asks something else.
        let others = [
            StubFixture.query("WWW.example.com", id: 1),
            StubFixture.query("www.example.com", .AAAA, id: 1),
            StubFixture.query("www.example.com", id: 1, edns: DNSEDNS(udpPayloadSize: 1232)),
            StubFixture.query("www.example.com", id: 1, edns: DNSEDNS(udpPayloadSize: 1232, dnssecOK: true)),
        ]
        for other in others { XCTAssertNil(cache.answer(other[...], now: 0.1)) }
        XCTAssertNotNil(cache.answer(query[...], now: 0.1))
    }

    func testAnEntryLivesAtMostItsLifetimeAndNeverPastTheSmallestTTLLessASecond() throws {
        var cache = Cache()
        let long = StubFixture.query("long.example.com")
        cache.store(long[...], answer: try answer(long, DNSStubResponse(answers: [StubFixture.a("long.example.com", 1, ttl: 300)])), now: 100, source: "cache")
        XCTAssertNotNil(cache.answer(long[...], now: 100.99))
        XCTAssertNil(cache.answer(long[...], now: 101))
        XCTAssertEqual(cache.count, 0, "an expired entry is removed when found")

        let short = StubFixture.query("short.example.com")
        let records = [StubFixture.a("short.example.com", 1, ttl: 300), StubFixture.a("short.example.com", 2, ttl: 2)]
        var configuration = Cache.Configuration()
        configuration.lifetime = 30
        var patient = Cache(configuration: configuration)
        patient.store(short[...], answer: try answer(short, DNSStubResponse(answers: records)), now: 0, source: "cache")
        XCTAssertNotNil(patient.answer(short[...], now: 0.9))
        XCTAssertNil(patient.answer(short[...], now: 1.0), "TTL 2 less a second")
    }

    func testOnlyWholeAnswersThatCanBeRepeatedAreKept() throws {
        var cache = Cache()
        let query = StubFixture.query("www.example.com")
        let refused: [(String, DNSStubResponse)] = [
            ("TTL 1", DNSStubResponse(answers: [StubFixture.a("www.example.com", 1, ttl: 1)])),
            ("TTL 0", DNSStubResponse(answers: [StubFixture.a("www.example.com", 1, ttl: 0)])),
            ("no record: nothing bounds it", DNSStubResponse()),
            ("SERVFAIL", .serverFailure(.networkError, "down")),
            ("truncated", DNSStubResponse(isTruncated: true)),
        ]
        for (label, response) in refused {
            cache.store(query[...], answer: try answer(query, response), now: 0, source: label)
            XCTAssertNil(cache.answer(query[...], now: 0), label)
        }
        // NXDOMAIN with its SOA is kept, bounded by the SOA's TTL.
        let negative = DNSStubResponse(rcode: .nameError, authorities: [StubFixture.soa(ttl: 60)])
        cache.store(query[...], answer: try answer(query, negative), now: 0, source: "nxdomain")
        XCTAssertEqual(cache.answer(query[...], now: 0.5)?.source, "nxdomain")
        // Garbage is not an answer, and a short query is not a query.
        cache.store(query[...], answer: [UInt8](repeating: 0xFF, count: 40), now: 0, source: "garbage")
        XCTAssertEqual(cache.answer(query[...], now: 0.5)?.source, "nxdomain")
        XCTAssertNil(cache.answer([1, 2, 3][...], now: 0))
    }

    func testTheCapacityIsABound() throws {
        var configuration = Cache.Configuration()
        configuration.capacity = 8
        var cache = Cache(configuration: configuration)
        for index in 0..<100 {
            let query = StubFixture.query("n\(index).example.com")
            cache.store(query[...], answer: try answer(query, DNSStubResponse(answers: [StubFixture.a("n\(index).example.com", 1)])), now: 0, source: "x")
            XCTAssertLessThanOrEqual(cache.count, 8)
        }
        let last = StubFixture.query("n99.example.com")
        XCTAssertNotNil(cache.answer(last[...], now: 0))
        cache.removeAll()
        XCTAssertNil(cache.answer(last[...], now: 0))
    }

    func testTTLsAreReadPastCompressedNamesAndWithoutTheOPTRecord() throws {
        let query = StubFixture.query("www.example.com", edns: DNSEDNS(udpPayloadSize: 1232, dnssecOK: true))
        let response = DNSStubResponse(
            answers: [StubFixture.a("www.example.com", 1, ttl: 300), StubFixture.a("www.example.com", 2, ttl: 200)],
            authorities: [StubFixture.soa(ttl: 3600)])
        let bytes = try answer(query, response)
        XCTAssertEqual(Cache.ttls(in: bytes), [300, 200, 3600], "the OPT record's flags are not a TTL")
        XCTAssertNil(Cache.ttls(in: Array(bytes.dropLast())), "cut short")
        XCTAssertNil(Cache.ttls(in: bytes + [0]), "bytes past the last record")
        XCTAssertNil(Cache.ttls(in: [0, 1]))
    }
}
