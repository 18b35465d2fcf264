import HTTPDNSCore
import HTTPDNSServer
import XCTest

final class HTTPDNSUpstreamFailureCacheTests: XCTestCase {
    private let start = ContinuousClock.now

    private func key(_ host: String) -> HTTPDNSCacheKey { HTTPDNSCacheKey(host: host, family: .ipv4) }

    func testEntriesExpireAfterTheirTTL() {
        var cache = HTTPDNSUpstreamFailureCache()
        cache.insert(key("a.test"), ttl: .seconds(5), now: start)
        XCTAssertTrue(cache.contains(key("a.test"), now: start))
        XCTAssertTrue(cache.contains(key("a.test"), now: start + .milliseconds(4_999)))
        XCTAssertFalse(cache.contains(key("a.test"), now: start + .seconds(5)))
        XCTAssertFalse(cache.contains(key("b.test"), now: start))
        XCTAssertFalse(cache.contains(HTTPDNSCacheKey(host: "a.test", family: .ipv6), now: start))
        cache.insert(key("zero.test"), ttl: .zero, now: start)
        XCTAssertFalse(cache.contains(key("zero.test"), now: start))
        cache.remove(key("a.test"))
        XCTAssertFalse(cache.contains(key("a.test"), now: start))
    }

    func testTheCacheIsBounded() {
        var cache = HTTPDNSUpstreamFailureCache()
        for index in 0..<HTTPDNSUpstreamFailureCache.capacity {
            cache.insert(key("n\(index).test"), ttl: .seconds(10 + index), now: start)
        }
        XCTAssertEqual(cache.count, HTTPDNSUpstreamFailureCache.capacity)
        // Full and nothing expired: the soonest to expire (n0) makes room.
        cache.insert(key("new.test"), ttl: .seconds(60), now: start)
        XCTAssertEqual(cache.count, HTTPDNSUpstreamFailureCache.capacity)
        XCTAssertFalse(cache.contains(key("n0.test"), now: start))
        XCTAssertTrue(cache.contains(key("new.test"), now: start))
        // Later, expired entries are swept in one go.
        cache.insert(key("late.test"), ttl: .seconds(1), now: start + .seconds(20))
        XCTAssertLessThan(cache.count, HTTPDNSUpstreamFailureCache.capacity - 5)
        XCTAssertTrue(cache.contains(key("late.test"), now: start + .seconds(20)))
    }
}
