import HTTPDNSCore
import XCTest

/// Issue 12, finding 4: a cache entry may hold anything (a cache file is untrusted), and a lookup
/// must never trap on it. `"ttl": 9223372036854775807` used to trap the first lookup of its host.
final class HTTPDNSCachePolicyHostileTests: XCTestCase {
    private let key = HTTPDNSCacheKey(host: "a.example", family: .ipv4)
    private let now: Double = 1_767_225_600

    func testAnyTTLAndStoreTimeLooksUpWithoutTrapping() throws {
        let ttls = [Int.max, Int.min, -1, 0, HTTPDNSFormatLimits.maxTTL, HTTPDNSFormatLimits.maxTTL + 1, Int(Int32.max) * 4]
        let times = [now, now - 1e9, now + 1e9, 1e300, -1e300, .nan, .infinity, -.infinity, .greatestFiniteMagnitude, 0]
        for ttl in ttls {
            for storedAt in times {
                for lookupAt in [now, storedAt, .infinity, -.infinity, .nan] {
                    var cache = HTTPDNSCachePolicy()
                    cache.insert(key, HTTPDNSCacheEntry(
                        addresses: [HTTPDNSIPAddress("192.0.2.1")!], source: "p", origin: .httpdns, storedAt: storedAt, ttl: ttl))
                    let stored = try XCTUnwrap(cache.peek(key))
                    XCTAssertTrue((0...HTTPDNSFormatLimits.maxTTL).contains(stored.ttl), "TTL \(ttl) stored as \(stored.ttl)")
                    if case .fresh(_, let remaining, _) = cache.lookup(key, now: lookupAt) {
                        XCTAssertTrue((1...HTTPDNSFormatLimits.maxTTL).contains(remaining), "ttl \(ttl) at \(storedAt): \(remaining)")
                    }
                    _ = cache.refreshFailed(key, now: lookupAt)
                    _ = cache.lookup(key, now: lookupAt)
                }
            }
        }
    }

    func testTTLPastTwoToTheThirtyFirstIsStoredAsZero() {
        var cache = HTTPDNSCachePolicy()
        cache.insert(key, HTTPDNSCacheEntry(addresses: [HTTPDNSIPAddress("192.0.2.1")!], source: "p", origin: .httpdns, storedAt: now, ttl: Int.max))
        XCTAssertEqual(cache.peek(key)?.ttl, 0)
        XCTAssertEqual(cache.lookup(key, now: now + 1), .expired(cache.peek(key)!))
    }

    func testRemainingSecondsIsClampedForAnyInterval() {
        XCTAssertEqual(HTTPDNSCachePolicy.remainingSeconds(0.2), 1)
        XCTAssertEqual(HTTPDNSCachePolicy.remainingSeconds(41.5), 42)
        XCTAssertEqual(HTTPDNSCachePolicy.remainingSeconds(-5), 1)
        XCTAssertEqual(HTTPDNSCachePolicy.remainingSeconds(.nan), 1)
        XCTAssertEqual(HTTPDNSCachePolicy.remainingSeconds(.infinity), HTTPDNSFormatLimits.maxTTL)
        XCTAssertEqual(HTTPDNSCachePolicy.remainingSeconds(9.3e18), HTTPDNSFormatLimits.maxTTL)
    }

    /// An entry loaded from disk asks for a refresh at its first lookup, whatever its age.
    func testEntriesFromDiskAskForARefreshAtOnce() {
        var cache = HTTPDNSCachePolicy()
        var entry = HTTPDNSCacheEntry(addresses: [HTTPDNSIPAddress("192.0.2.1")!], source: "p", origin: .httpdns, storedAt: now, ttl: 600)
        entry.fromDisk = true
        cache.insert(key, entry)
        guard case .fresh(_, _, let refresh) = cache.lookup(key, now: now + 1) else { return XCTFail("not fresh") }
        XCTAssertTrue(refresh)
        _ = cache.refreshFailed(key, now: now + 1)
        guard case .fresh(_, _, let again) = cache.lookup(key, now: now + 2) else { return XCTFail("not fresh") }
        XCTAssertFalse(again, "a failed refresh waits the retry interval")
    }
}
