import DNSStubCore
import HTTPDNSCore
import XCTest

/// The stub's per-client token buckets with an explicit `now`: the limit and burst, refill, the
/// slip, loopback off by default, /64 keys, and a table that stays bounded under spoofed sources.
final class DNSStubRateLimiterTests: XCTestCase {
    let client = HTTPDNSIPAddress("192.0.2.1")!

    func limiter(_ rate: Int = 10, loopback: Int = 0, slip: Int = 2, slots: Int = 64) -> DNSStubRateLimiter {
        var configuration = DNSStubRateLimiter.Configuration()
        configuration.queriesPerSecond = rate
        configuration.loopbackQueriesPerSecond = loopback
        configuration.slip = slip
        configuration.slots = slots
        return DNSStubRateLimiter(configuration: configuration)
    }

    func testDefaultsAreOffForLoopbackAndAThousandOtherwise() {
        var limiter = DNSStubRateLimiter()
        XCTAssertFalse(limiter.isOff)
        for _ in 0..<5000 { XCTAssertEqual(limiter.admit(HTTPDNSIPAddress("127.0.0.1")!, now: 0), .answer) }
        for _ in 0..<5000 { XCTAssertEqual(limiter.admit(HTTPDNSIPAddress("::1")!, now: 0), .answer) }
        let answered = (0..<1500).filter { _ in limiter.admit(client, now: 0) == .answer }.count
        XCTAssertEqual(answered, 1000)
        XCTAssertEqual(limiter.configuration.queriesPerSecond(for: HTTPDNSIPAddress("::ffff:127.0.0.1")!), 0, "mapped loopback is loopback")
        XCTAssertEqual(limiter.configuration.queriesPerSecond(for: client), 1000)
        var off = self.limiter(0)
        XCTAssertTrue(off.isOff)
        XCTAssertEqual(off.admit(client, now: 0), .answer)
    }

    func testBurstThenSlipEveryOtherThenRefill() {
        var limiter = limiter(10)
        let first = (0..<16).map { _ in limiter.admit(client, now: 100) }
        XCTAssertEqual(first, Array(repeating: .answer, count: 10) + [.drop, .slip, .drop, .slip, .drop, .slip])
        XCTAssertEqual(limiter.admit(client, now: 100.05), .drop, "half a token")
        XCTAssertEqual(limiter.admit(client, now: 100.15), .answer, "one token after 0.1 s at 10/s")
        let later = (0..<12).map { _ in limiter.admit(client, now: 200) }
        XCTAssertEqual(later.filter { $0 == .answer }.count, 10, "refilled to the burst, not beyond")
        XCTAssertNotEqual(limiter.admit(client, now: 150), .answer, "time going back refills nothing")
    }

    func testSlipSettingsAndTCP() {
        var never = limiter(1, slip: 0)
        XCTAssertEqual((0..<5).map { _ in never.admit(client, now: 0) }, [.answer, .drop, .drop, .drop, .drop])
        var always = limiter(1, slip: 1)
        XCTAssertEqual((0..<3).map { _ in always.admit(client, now: 0) }, [.answer, .slip, .slip])
        var tcp = limiter(1, slip: 1)
        XCTAssertEqual((0..<3).map { _ in tcp.admit(client, transport: .tcp, now: 0) }, [.answer, .drop, .drop], "TCP: the caller refuses")
    }

    /// The slot is a hash seeded per process, so with a fixed table size two of these clients share a
    /// slot in about one run of sixty-four (seen in CI) and the second arrives to a full bucket. The
    /// test takes the first table size, from 64 up, where the four distinct clients have four slots.
    func testClientsAreIPv4AddressesAndIPv6Slash64s() throws {
        let distinct = ["192.0.2.1", "192.0.2.2", "2001:db8:1:2::1", "2001:db8:1:3::1"].map { HTTPDNSIPAddress($0)! }
        let slots = (64..<4096).first { slots in
            Set(distinct.compactMap { self.limiter(1, slots: slots).slot(for: $0) }).count == distinct.count
        }
        var limiter = self.limiter(1, slots: try XCTUnwrap(slots))
        XCTAssertEqual(limiter.slot(for: HTTPDNSIPAddress("::ffff:192.0.2.1")!), limiter.slot(for: distinct[0]))
        XCTAssertEqual(limiter.slot(for: HTTPDNSIPAddress("2001:db8:1:2:ffff::9")!), limiter.slot(for: distinct[2]))
        XCTAssertEqual(limiter.admit(HTTPDNSIPAddress("192.0.2.1")!, now: 0), .answer)
        XCTAssertEqual(limiter.admit(HTTPDNSIPAddress("192.0.2.2")!, now: 0), .answer, "another /32")
        XCTAssertEqual(limiter.admit(HTTPDNSIPAddress("::ffff:192.0.2.1")!, now: 0), .drop, "IPv4-mapped is the same client")
        XCTAssertEqual(limiter.admit(HTTPDNSIPAddress("2001:db8:1:2::1")!, now: 0), .answer)
        XCTAssertEqual(limiter.admit(HTTPDNSIPAddress("2001:db8:1:2:ffff::9")!, now: 0), .drop, "same /64")
        XCTAssertEqual(limiter.admit(HTTPDNSIPAddress("2001:db8:1:3::1")!, now: 0), .answer, "another /64")
    }

    func testLoopbackLimitWhenAsked() {
        var limiter = limiter(5, loopback: 2)
        let results = (0..<3).map { _ in limiter.admit(HTTPDNSIPAddress("127.0.0.1")!, now: 0) }
        XCTAssertEqual(results, [.answer, .answer, .drop])
    }

    /// A hundred thousand spoofed sources: the table keeps its slots, and each source, new to its slot,
    /// starts with a full bucket (the table errs towards answering).
    func testTableStaysBoundedUnderSpoofedSources() {
        var limiter = limiter(1, slots: 8)
        for index in 0..<100_000 {
            let address = HTTPDNSIPAddress(bytes: [10, UInt8(index >> 16 & 0xFF), UInt8(index >> 8 & 0xFF), UInt8(index & 0xFF)])!
            XCTAssertEqual(limiter.admit(address, now: 0), .answer)
        }
        XCTAssertEqual(limiter.tableSize, 8)
        // With one slot, two clients take it in turn: each arrives to a fresh bucket.
        var single = self.limiter(1, slots: 1)
        XCTAssertEqual(single.admit(client, now: 0), .answer)
        XCTAssertEqual(single.admit(client, now: 0), .drop)
        XCTAssertEqual(single.admit(HTTPDNSIPAddress("192.0.2.9")!, now: 0), .answer)
        XCTAssertEqual(single.admit(client, now: 0), .answer, "evicted, so fresh")
    }
}
