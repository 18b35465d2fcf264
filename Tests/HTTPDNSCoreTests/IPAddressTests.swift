import HTTPDNSCore
import XCTest

final class IPAddressTests: XCTestCase {
    func testIPv4ParseAndPrint() {
        for text in ["1.2.3.4", "0.0.0.0", "255.255.255.255", "10.0.0.1", "192.168.1.100"] {
            let address = HTTPDNSIPAddress(text)
            XCTAssertEqual(address?.description, text)
            XCTAssertEqual(address?.family, .v4)
            XCTAssertEqual(address?.bytes.count, 4)
        }
        XCTAssertEqual(HTTPDNSIPAddress("1.2.3.4")?.bytes, [1, 2, 3, 4])
        XCTAssertEqual(HTTPDNSIPAddress("1.2.3.4")?.uriText, "1.2.3.4")
        XCTAssertEqual(HTTPDNSIPAddress(bytes: [8, 8, 4, 4])?.description, "8.8.4.4")
    }

    func testIPv4Junk() {
        let junk = [
            "", "1.2.3", "1.2.3.4.5", " 1.2.3.4", "1.2.3.4 ", "01.2.3.4", "1.2.3.04", "256.1.1.1", "1.2.3.-1",
            "1..2.3", "1.2.3.", ".1.2.3", "0x1.2.3.4", "1.2.3.4/24", "1,2,3,4", "a.b.c.d", "1.2.3.4\n", "１.2.3.4",
            "4294967295", "1.2.3.4:80", "[1.2.3]", "1.2.3.4\u{0}",
        ]
        for text in junk {
            XCTAssertNil(HTTPDNSIPAddress(text), "accepted \(text.debugDescription)")
        }
        XCTAssertNil(HTTPDNSIPAddress(bytes: [1, 2, 3]))
        XCTAssertNil(HTTPDNSIPAddress(bytes: []))
        XCTAssertNil(HTTPDNSIPAddress(bytes: [UInt8](repeating: 0, count: 5)))
    }

    func testIPv6CanonicalFormsRFC5952() {
        let cases: [(String, String)] = [
            ("2001:0db8:0000:0000:0000:0000:0000:0001", "2001:db8::1"),  // §4.1 leading zeros, §4.2.1 longest run
            ("2001:DB8::1", "2001:db8::1"),  // §4.3 lower case
            ("2001:db8:0:0:1:0:0:1", "2001:db8::1:0:0:1"),  // §4.2.3 first of equal runs
            ("2001:db8:0:1:1:1:1:1", "2001:db8:0:1:1:1:1:1"),  // §4.2.2 one zero group is not compressed
            ("2001:0:0:1:0:0:0:1", "2001:0:0:1::1"),  // longest run wins over the first
            ("0:0:0:0:0:0:0:0", "::"),
            ("0:0:0:0:0:0:0:1", "::1"),
            ("1:0:0:0:0:0:0:0", "1::"),
            ("fe80::1", "fe80::1"),
            ("2606:2800:220:1:248:1893:25c8:1946", "2606:2800:220:1:248:1893:25c8:1946"),
            ("::ffff:10.0.0.1", "::ffff:10.0.0.1"),  // §5 mapped IPv4 keeps the dotted tail
            ("::FFFF:0a00:0001", "::ffff:10.0.0.1"),
        ]
        for (input, canonical) in cases {
            let address = HTTPDNSIPAddress(input)
            XCTAssertEqual(address?.description, canonical, input)
            XCTAssertEqual(address?.family, .v6, input)
            XCTAssertEqual(address.flatMap { HTTPDNSIPAddress($0.description) }, address, "round trip \(input)")
        }
        XCTAssertEqual(HTTPDNSIPAddress("[::1]")?.description, "::1")
        XCTAssertEqual(HTTPDNSIPAddress("::1")?.uriText, "[::1]")
        XCTAssertEqual(HTTPDNSIPAddress("2001:db8::1")?.bytes, [0x20, 0x01, 0x0d, 0xb8] + [UInt8](repeating: 0, count: 11) + [1])
    }

    func testIPv6Junk() {
        let junk = [
            ":::", "1:2:3:4:5:6:7:8:9", "1::2::3", "12345::", "g::1", "fe80::1%eth0", "[::1", "::1]", "[[::1]]",
            " ::1", "::1 ", "2001:db8::/32", ":", "1:2:3:4:5:6:7", "::ffff:1.2.3", "::ffff:1.2.3.4.5",
            String(repeating: "0", count: 60) + "::1", "::1\u{0}junk", "::1\u{0}",
        ]
        for text in junk {
            XCTAssertNil(HTTPDNSIPAddress(text), "accepted \(text.debugDescription)")
        }
    }

    func testMappedIPv4() {
        let mapped = HTTPDNSIPAddress("::ffff:10.0.0.1")
        XCTAssertEqual(mapped?.ipv4Mapped, HTTPDNSIPAddress("10.0.0.1"))
        XCTAssertTrue(mapped?.isBogon == true)
        XCTAssertFalse(HTTPDNSIPAddress("::ffff:8.8.8.8")?.isBogon ?? true)
        XCTAssertTrue(HTTPDNSIPAddress("::ffff:127.0.0.1")?.isBogon == true)
        XCTAssertNil(HTTPDNSIPAddress("2001:db8::1")?.ipv4Mapped)
        XCTAssertNil(HTTPDNSIPAddress("1.2.3.4")?.ipv4Mapped)
    }

    /// Every range listed under "Hijack signals" in rfc-notes.md, checked at both edges and just outside.
    func testBogonRanges() {
        let bogons = [
            "0.0.0.0", "0.255.255.255",  // 0.0.0.0/8
            "127.0.0.1", "127.255.255.255",  // 127/8
            "10.0.0.0", "10.255.255.255",  // 10/8
            "172.16.0.0", "172.31.255.255",  // 172.16/12
            "192.168.0.0", "192.168.255.255",  // 192.168/16
            "100.64.0.0", "100.127.255.255",  // 100.64/10
            "169.254.0.0", "169.254.255.255",  // 169.254/16
            "198.18.0.0", "198.19.255.255",  // 198.18/15
            "240.0.0.0", "255.255.255.255",  // 240/4
            "::", "::1",
            "fc00::", "fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff",  // fc00::/7
            "fe80::", "febf:ffff::1",  // fe80::/10
            "::ffff:10.0.0.1", "::ffff:192.168.1.1", "::ffff:0.0.0.0",
        ]
        for text in bogons {
            XCTAssertTrue(ip(text).isBogon, "\(text) should be a bogon")
        }
        let publics = [
            "1.0.0.0", "9.255.255.255", "11.0.0.0", "126.255.255.255", "128.0.0.0",
            "172.15.255.255", "172.32.0.0", "192.167.255.255", "192.169.0.0",
            "100.63.255.255", "100.128.0.0", "169.253.255.255", "169.255.0.0",
            "198.17.255.255", "198.20.0.0", "223.255.255.255", "8.8.8.8", "119.29.29.98", "203.107.1.1",
            "2400:3200::1", "2606:2800:220:1:248:1893:25c8:1946", "fbff::1", "fec0::1", "::2", "::ffff:8.8.8.8",
        ]
        for text in publics {
            XCTAssertFalse(ip(text).isBogon, "\(text) should not be a bogon")
        }
        XCTAssertTrue(ip("127.0.0.1").isLoopback)
        XCTAssertTrue(ip("::1").isLoopback)
        XCTAssertFalse(ip("::2").isLoopback)
        XCTAssertTrue(ip("0.1.2.3").isUnspecified)
        XCTAssertTrue(ip("::").isUnspecified)
    }

    func testCodable() throws {
        let addresses = [ip("1.2.3.4"), ip("2001:db8::1")]
        let data = try JSONEncoder().encode(addresses)
        XCTAssertEqual(String(decoding: data, as: UTF8.self), #"["1.2.3.4","2001:db8::1"]"#)
        XCTAssertEqual(try JSONDecoder().decode([HTTPDNSIPAddress].self, from: data), addresses)
        XCTAssertThrowsError(try JSONDecoder().decode([HTTPDNSIPAddress].self, from: Data(#"["1.2.3"]"#.utf8)))
    }

    func testLiteralDetection() {
        XCTAssertTrue(HTTPDNSIPAddress.isLiteral("1.2.3.4"))
        XCTAssertTrue(HTTPDNSIPAddress.isLiteral("[::1]"))
        XCTAssertFalse(HTTPDNSIPAddress.isLiteral("example.com"))
        XCTAssertFalse(HTTPDNSIPAddress.isLiteral("1.2.3.4.example.com"))
    }

    /// Seeded random addresses: bytes → text → parse gives the same address and the same bytes.
    func testRandomRoundTripsThroughText() {
        var generator = SeededGenerator(seed: 0x5eed_1)
        for count in [4, 16] {
            for _ in 0..<2_000 {
                var bytes = (0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) }
                // Favour runs of zeros, which exercise IPv6 compression.
                if count == 16, Bool.random(using: &generator) {
                    let start = Int.random(in: 0..<16, using: &generator)
                    for index in start..<min(16, start + Int.random(in: 1...12, using: &generator)) { bytes[index] = 0 }
                }
                let address = HTTPDNSIPAddress(bytes: bytes)!
                let parsed = HTTPDNSIPAddress(address.description)
                XCTAssertEqual(parsed, address, address.description)
                XCTAssertEqual(parsed?.bytes, bytes)
                XCTAssertEqual(parsed?.family, count == 4 ? .v4 : .v6)
            }
        }
    }
}

