import DNSWire
import DNSStubCore
import HTTPDNSCore
import XCTest

/// The stub's persisted wire cache: what is saved loads back with its TTLs still counting down in
/// wall-clock time, and a file that is not whole and signed right loads nothing.
final class DNSStubCacheFileTests: XCTestCase {
    private typealias F = StubFixture
    private let wall: Double = 1_800_000_000

    private func request(_ host: String, _ type: DNSRecordType = .A, edns: DNSEDNS? = nil) throws -> DNSStubRequest {
        try XCTUnwrap(F.request(F.query(host, type, edns: edns)))
    }

    /// A cache with a positive answer (TTL 300), a DO+CD one, an NXDOMAIN and a NODATA, stored at
    /// `now` 10 (monotonic) while the wall clock said `wall`.
    private func filledCache() throws -> DNSStubCache {
        var cache = DNSStubCache()
        cache.store(DNSStubResponse(answers: [F.a("www.example.com", 1), F.a("www.example.com", 2)]), for: try request("www.example.com"), now: 10)
        var signed = try request("signed.example.com", edns: DNSEDNS(dnssecOK: true))
        signed.checkingDisabled = true
        cache.store(DNSStubResponse(answers: [F.a("signed.example.com", 3, ttl: 60)], authenticData: true), for: signed, now: 10)
        cache.store(DNSStubResponse(rcode: .nameError, authorities: [F.soa(minimum: 120)]), for: try request("gone.example.com", .MX), now: 10)
        cache.store(DNSStubResponse(authorities: [F.soa(minimum: 200)]), for: try request("www.example.com", .AAAA), now: 10)
        return cache
    }

    func testRoundTripKeepsEntriesOrderAndCountsDownAcrossTheRestart() throws {
        let saved = try filledCache()
        // Saved at monotonic 70, wall clock wall + 60 (60 s after the store).
        let bytes = DNSStubCacheFile.encode(saved, now: 70, wallClock: wall + 60, key: nil)
        XCTAssertTrue(bytes.starts(with: Array("swift-httpdns-stub-cache 1 sha256 ".utf8)))
        // Loaded after a restart: a new monotonic clock (now 5), 100 s later on the wall clock.
        var loaded = DNSStubCache()
        XCTAssertEqual(try DNSStubCacheFile.load(bytes, key: nil, into: &loaded, now: 5, wallClock: wall + 160), 4)
        XCTAssertEqual(loaded.keys, saved.keys, "LRU order kept")
        let hit = try XCTUnwrap(loaded.lookup(try request("www.example.com"), now: 5))
        XCTAssertEqual(hit.response.answers.map(\.ttl), [140, 140], "300 - 160 s since the store")
        XCTAssertEqual(hit.response.answers.map(\.data), [.a([192, 0, 2, 1]), .a([192, 0, 2, 2])])
        var signed = try request("signed.example.com", edns: DNSEDNS(dnssecOK: true))
        XCTAssertNil(loaded.lookup(signed, now: 5), "the CD bit is part of the key")
        signed.checkingDisabled = true
        XCTAssertNil(loaded.lookup(signed, now: 5), "60 s TTL: expired after 160 s")
        let stale = try XCTUnwrap(loaded.lookup(signed, now: 5, upstreamFailed: true))
        XCTAssertTrue(stale.isStale)
        XCTAssertTrue(stale.response.authenticData)
        XCTAssertEqual(stale.response.extendedError?.infoCode, .staleAnswer)
        let nxdomain = try XCTUnwrap(loaded.lookup(try request("gone.example.com", .TXT), now: 5, upstreamFailed: true))
        XCTAssertEqual(nxdomain.response.rcode, .nameError, "an NXDOMAIN covers every type")
        XCTAssertEqual(loaded.lookup(try request("www.example.com", .AAAA), now: 5)?.remainingTTL, 40, "NODATA: 200 - 160")
    }

    func testHMACKeyMustMatch() throws {
        let key = Array("a key of our own".utf8)
        let bytes = DNSStubCacheFile.encode(try filledCache(), now: 10, wallClock: wall, key: key)
        XCTAssertTrue(bytes.starts(with: Array("swift-httpdns-stub-cache 1 hmac-sha256 ".utf8)))
        var cache = DNSStubCache()
        XCTAssertEqual(try DNSStubCacheFile.load(bytes, key: key, into: &cache, now: 0, wallClock: wall), 4)
        for other in [nil, Array("another key".utf8)] {
            var refused = DNSStubCache()
            XCTAssertThrowsError(try DNSStubCacheFile.load(bytes, key: other, into: &refused, now: 0, wallClock: wall))
            XCTAssertEqual(refused.count, 0)
        }
    }

    func testEveryTruncationAndEveryFlippedByteIsRefusedWhole() throws {
        let bytes = DNSStubCacheFile.encode(try filledCache(), now: 10, wallClock: wall, key: nil)
        for length in 0..<bytes.count {
            var cache = DNSStubCache()
            XCTAssertThrowsError(try DNSStubCacheFile.load(Array(bytes.prefix(length)), key: nil, into: &cache, now: 0, wallClock: wall),
                                 "truncated to \(length)")
            XCTAssertEqual(cache.count, 0)
        }
        for index in stride(from: 0, to: bytes.count, by: 7) {
            var damaged = bytes
            damaged[index] ^= 0x01
            var cache = DNSStubCache()
            XCTAssertThrowsError(try DNSStubCacheFile.load(damaged, key: nil, into: &cache, now: 0, wallClock: wall), "byte \(index)")
            XCTAssertEqual(cache.count, 0)
        }
        var cache = DNSStubCache()
        XCTAssertThrowsError(try DNSStubCacheFile.load(bytes + [0], key: nil, into: &cache, now: 0, wallClock: wall))
    }

    /// A well-signed body that is not ours (the digest is right, the content wrong) is still refused
    /// whole: another version, a short count, bytes after the last entry, a message that is no answer.
    func testWellSignedButMalformedBodiesAreRefused() throws {
        func signed(_ body: [UInt8], version: Int = 1) -> [UInt8] {
            Array("swift-httpdns-stub-cache \(version) sha256 \(HTTPDNSCrypto.hexEncode(HTTPDNSCrypto.sha256(body)))\n".utf8) + body
        }
        let good = DNSStubCacheFile.encode(try filledCache(), now: 10, wallClock: wall, key: nil)
        let body = Array(good[(good.firstIndex(of: 0x0A)! + 1)...])
        var cache = DNSStubCache()
        XCTAssertEqual(try DNSStubCacheFile.load(signed(body), key: nil, into: &cache, now: 0, wallClock: wall), 4)
        let query = F.query("www.example.com")
        let cases: [(String, [UInt8], String)] = [
            ("version 2", signed(body, version: 2), "not a version 1 stub cache file"),
            ("count too high", signed([0, 0, 0, 5] + body.dropFirst(4)), "truncated"),
            ("trailing", signed(body + [0]), "bytes after the last entry"),
            ("unknown flag", signed([0, 0, 0, 1, 0x10] + [UInt8](repeating: 0, count: 8) + [0, 0]), "entry 0: unknown flags"),
            ("a query", signed([0, 0, 0, 1, 0] + [UInt8](repeating: 0, count: 8) + [0, UInt8(query.count)] + query), "entry 0: not a DNS answer"),
            ("huge count", signed([0xFF, 0xFF, 0xFF, 0xFF]), "too many entries"),
            ("no header", Array("swift-httpdns-stub-cache 1 sha256".utf8), "no header"),
        ]
        for (name, bytes, reason) in cases {
            var refused = DNSStubCache()
            XCTAssertThrowsError(try DNSStubCacheFile.load(bytes, key: nil, into: &refused, now: 0, wallClock: wall), name) { error in
                XCTAssertTrue((error as? DNSStubCacheFile.Rejection)?.reason.hasPrefix(reason) ?? false, "\(name): \(error)")
            }
            XCTAssertEqual(refused.count, 0, name)
        }
    }

    func testEntriesFromTheFutureOrPastTheStaleWindowAreDroppedOneByOne() throws {
        let bytes = DNSStubCacheFile.encode(try filledCache(), now: 10, wallClock: wall, key: nil)
        var cache = DNSStubCache()
        XCTAssertEqual(try DNSStubCacheFile.load(bytes, key: nil, into: &cache, now: 0, wallClock: wall - 3600), 0, "stored an hour ahead")
        XCTAssertEqual(try DNSStubCacheFile.load(bytes, key: nil, into: &cache, now: 0, wallClock: wall + 300 + 86_400 + 1), 0,
                       "past TTL and the one-day stale window")
        XCTAssertEqual(try DNSStubCacheFile.load(bytes, key: nil, into: &cache, now: 0, wallClock: wall + 60 + 86_400 + 1), 3,
                       "the 60 s answer is past its stale window, the others (120, 200, 300 s) are not")
    }

    func testASizeLimitKeepsTheMostRecentlyUsed() throws {
        let cache = try filledCache()
        let whole = DNSStubCacheFile.encode(cache, now: 10, wallClock: wall, key: nil)
        let headerLength = whole.firstIndex(of: 0x0A)! + 1
        let limited = DNSStubCacheFile.encode(cache, now: 10, wallClock: wall, key: nil, maximumBodySize: whole.count - headerLength - 1)
        var loaded = DNSStubCache()
        XCTAssertEqual(try DNSStubCacheFile.load(limited, key: nil, into: &loaded, now: 0, wallClock: wall), 3)
        XCTAssertEqual(loaded.keys, Array(cache.keys.prefix(3)), "the least recently used left out")
    }

    func testEntriesAlreadyCachedWin() throws {
        let bytes = DNSStubCacheFile.encode(try filledCache(), now: 10, wallClock: wall, key: nil)
        var cache = DNSStubCache()
        let query = try request("www.example.com")
        cache.store(DNSStubResponse(answers: [F.a("www.example.com", 9)]), for: query, now: 0)
        XCTAssertEqual(try DNSStubCacheFile.load(bytes, key: nil, into: &cache, now: 0, wallClock: wall), 3)
        XCTAssertEqual(cache.lookup(query, now: 0)?.response.answers.map(\.data), [.a([192, 0, 2, 9])])
    }
}
