import Foundation
import DNSWire
import HTTPDNSCore
import XCTest

/// EDNS Client Subnet values (RFC 7871 §6) and their place in DoH wire queries.
final class HTTPDNSClientSubnetTests: XCTestCase {
    private func subnet(_ text: String, v4: Int = 24, v6: Int = 56) -> HTTPDNSClientSubnet? {
        HTTPDNSClientSubnet(client: HTTPDNSIPAddress(text)!, ipv4PrefixLength: v4, ipv6PrefixLength: v6)
    }

    func testAddressesAreTruncatedToTheSourcePrefix() {
        XCTAssertEqual(subnet("203.0.113.77")?.description, "203.0.113.0/24")
        XCTAssertEqual(subnet("2001:db8:1234:5678:9abc::1")?.description, "2001:db8:1234:5600::/56")
        XCTAssertEqual(subnet("::ffff:203.0.113.77")?.description, "203.0.113.0/24", "IPv4-mapped counts as IPv4")
        XCTAssertEqual(subnet("203.0.113.77", v4: 20)?.description, "203.0.112.0/20")
        XCTAssertEqual(subnet("203.0.113.77", v4: 0)?.description, "0.0.0.0/0")
        XCTAssertEqual(subnet("203.0.113.77", v4: 32)?.description, "203.0.113.77/32")
        XCTAssertNil(subnet("203.0.113.77", v4: 33))
        // Not public: nothing worth sending.
        for text in ["127.0.0.1", "10.1.2.3", "192.168.1.1", "::1", "fe80::1", "fd00::1", "0.0.0.0", "::ffff:10.0.0.1"] {
            XCTAssertNil(subnet(text), text)
        }
    }

    /// RFC 7871 §11.1: IPv6 is sent with at most 56 bits, which lets a cache key hold a subnet in
    /// one word; every subnet the service can make survives the packing, and the key's encoding
    /// (the cache file) still names the subnet and refuses one the service could not have made.
    func testSubnetsPackIntoOneWordAndCacheKeysKeepThem() throws {
        XCTAssertNil(subnet("2001:db8::1", v6: 57))
        XCTAssertNil(subnet("2001:db8::1", v6: 64))
        var seen = Set<UInt64>()
        for (text, v4, v6) in [("203.0.113.77", 24, 56), ("203.0.113.77", 0, 56), ("203.0.113.77", 32, 56), ("198.51.100.1", 8, 56),
                               ("2001:db8:1234:5678::1", 24, 56), ("2001:db8:1234:5678::1", 24, 0), ("2001:db8:ffff:ffff::1", 24, 33)] {
            let value = try XCTUnwrap(subnet(text, v4: v4, v6: v6), text)
            XCTAssertNotEqual(value.packed, 0)
            XCTAssertTrue(value.isPackable, "\(value)")
            XCTAssertEqual(HTTPDNSClientSubnet(packed: value.packed), value, "\(value)")
            XCTAssertTrue(seen.insert(value.packed).inserted, "\(value) packs like another subnet")
            let key = HTTPDNSCacheKey(host: "www.example.test", family: .ipv4, clientSubnet: value)
            XCTAssertEqual(key.clientSubnet, value)
            let decoded = try JSONDecoder().decode(HTTPDNSCacheKey.self, from: JSONEncoder().encode(key))
            XCTAssertEqual(decoded, key)
            XCTAssertNotEqual(key, HTTPDNSCacheKey(host: "www.example.test", family: .ipv4))
        }
        XCTAssertNil(HTTPDNSClientSubnet(packed: 0))
        XCTAssertNil(HTTPDNSCacheKey(host: "a.test", family: .ipv4).clientSubnet)
        let written = try XCTUnwrap(String(
            data: JSONEncoder().encode(HTTPDNSCacheKey(host: "a.test", family: .ipv4, clientSubnet: subnet("203.0.113.77"))), encoding: .utf8))
        XCTAssertTrue(written.contains("clientSubnet"), written)
        XCTAssertFalse(written.contains("packed"), written)
        // A hostile cache file: a subnet with bits past its prefix, or longer than the service sends.
        let bad = #"{"host":"a.test","family":"ipv4","clientSubnet":{"address":"2001:db8::1","sourcePrefixLength":128}}"#
        XCTAssertThrowsError(try JSONDecoder().decode(HTTPDNSCacheKey.self, from: Data(bad.utf8)))
        let unmasked = #"{"host":"a.test","family":"ipv4","clientSubnet":{"address":"203.0.113.77","sourcePrefixLength":24}}"#
        XCTAssertThrowsError(try JSONDecoder().decode(HTTPDNSCacheKey.self, from: Data(unmasked.utf8)))
        let fine = #"{"host":"a.test","family":"ipv4","clientSubnet":{"address":"203.0.113.0","sourcePrefixLength":24}}"#
        XCTAssertEqual(try JSONDecoder().decode(HTTPDNSCacheKey.self, from: Data(fine.utf8)).clientSubnet, subnet("203.0.113.77"))
    }

    /// RFC 7871 §6: FAMILY, SOURCE PREFIX-LENGTH, SCOPE PREFIX-LENGTH 0, and only the bytes the prefix covers.
    func testTheOptionBytes() {
        XCTAssertEqual(subnet("203.0.113.77")?.option, [0, 8, 0, 7, 0, 1, 24, 0, 203, 0, 113])
        XCTAssertEqual(subnet("203.0.113.77", v4: 20)?.option, [0, 8, 0, 7, 0, 1, 20, 0, 203, 0, 112])
        XCTAssertEqual(subnet("203.0.113.77", v4: 0)?.option, [0, 8, 0, 4, 0, 1, 0, 0])
        XCTAssertEqual(subnet("2001:db8:1234:5678::1")?.option, [0, 8, 0, 11, 0, 2, 56, 0, 0x20, 0x01, 0x0d, 0xb8, 0x12, 0x34, 0x56])
    }

    /// RFC 7871 §7.3: the answer's option must repeat FAMILY, SOURCE PREFIX-LENGTH and ADDRESS.
    func testAnswersMustEchoTheSubnetOrLeaveItOut() throws {
        let sent = try XCTUnwrap(subnet("203.0.113.77"))
        XCTAssertTrue(sent.agrees(withAnswerOptions: []))
        XCTAssertTrue(sent.agrees(withAnswerOptions: [0, 10, 0, 2, 1, 2]), "another option only (a cookie)")
        XCTAssertTrue(sent.agrees(withAnswerOptions: [0, 8, 0, 7, 0, 1, 24, 0, 203, 0, 113]))
        XCTAssertTrue(sent.agrees(withAnswerOptions: [0, 8, 0, 7, 0, 1, 24, 16, 203, 0, 113]), "any scope")
        XCTAssertTrue(sent.agrees(withAnswerOptions: [0, 10, 0, 2, 1, 2, 0, 8, 0, 7, 0, 1, 24, 24, 203, 0, 113]))
        XCTAssertFalse(sent.agrees(withAnswerOptions: [0, 8, 0, 7, 0, 1, 24, 0, 198, 51, 100]), "other address")
        XCTAssertFalse(sent.agrees(withAnswerOptions: [0, 8, 0, 7, 0, 1, 23, 0, 203, 0, 112]), "other prefix")
        XCTAssertFalse(sent.agrees(withAnswerOptions: [0, 8, 0, 7, 0, 2, 24, 0, 203, 0, 113]), "other family")
        XCTAssertFalse(sent.agrees(withAnswerOptions: [0, 8, 0, 3, 0, 1, 24]), "truncated option")
        XCTAssertFalse(sent.agrees(withAnswerOptions: [0, 8, 0, 9, 0, 1, 24, 0, 203]), "length past the end")
    }

    func testDoHWireQueriesCarryTheTaskLocalSubnetInAnOPTRecord() throws {
        let format = DoHWireFormat(url: "https://doh.example/dns-query", method: .post)
        let plain = try format.requests(for: ["www.example.test"], family: .ipv4, now: 0)
        XCTAssertNil(try DNSMessage(decoding: plain[0].body ?? []).edns, "no subnet, no OPT (as before)")
        let subnet = try XCTUnwrap(subnet("198.51.100.9"))
        let requests = try HTTPDNSClientSubnet.$current.withValue(subnet) {
            try format.requests(for: ["www.example.test"], family: .both, now: 0)
        }
        XCTAssertEqual(requests.count, 2)
        for request in requests {
            let message = try DNSMessage(decoding: request.body ?? [])
            let edns = try XCTUnwrap(message.edns)
            XCTAssertEqual(edns.udpPayloadSize, 1232)
            XCTAssertEqual(edns.options, subnet.option)
            XCTAssertEqual(message.questions.first?.name.description, "www.example.test.")
        }
    }
}
