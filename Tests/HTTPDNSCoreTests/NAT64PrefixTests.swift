import HTTPDNSCore
import XCTest

final class NAT64PrefixTests: XCTestCase {
    /// RFC 6052 section 2.4, the table of example addresses: 192.0.2.33 in each prefix length.
    static let rfc6052Vectors: [(prefix: String, length: Int, synthesized: String)] = [
        ("2001:db8::", 32, "2001:db8:c000:221::"),
        ("2001:db8:100::", 40, "2001:db8:1c0:2:21::"),
        ("2001:db8:122::", 48, "2001:db8:122:c000:2:2100::"),
        ("2001:db8:122:300::", 56, "2001:db8:122:3c0:0:221::"),
        ("2001:db8:122:344::", 64, "2001:db8:122:344:c0:2:2100:0"),
        ("2001:db8:122:344::", 96, "2001:db8:122:344::c000:221"),
    ]

    func testNAT64SynthesisMatchesRFC6052Vectors() throws {
        let ipv4 = try XCTUnwrap(HTTPDNSIPAddress("192.0.2.33"))
        for vector in Self.rfc6052Vectors {
            let prefix = try XCTUnwrap(HTTPDNSNAT64Prefix(XCTUnwrap(HTTPDNSIPAddress(vector.prefix)), length: vector.length))
            let synthesized = prefix.synthesize(ipv4)
            XCTAssertEqual(synthesized, HTTPDNSIPAddress(vector.synthesized), "/\(vector.length)")
            XCTAssertEqual(prefix.extract(synthesized), ipv4, "/\(vector.length) round trip")
        }
    }

    func testNAT64DiscoveryFindsEachPrefixLengthFromTheWellKnownAddresses() throws {
        for vector in Self.rfc6052Vectors {
            let prefix = try XCTUnwrap(HTTPDNSNAT64Prefix(XCTUnwrap(HTTPDNSIPAddress(vector.prefix)), length: vector.length))
            // What a DNS64 with this prefix answers for ipv4only.arpa.
            let answers = HTTPDNSNAT64Prefix.wellKnownIPv4.map(prefix.synthesize)
            XCTAssertEqual(HTTPDNSNAT64Prefix.discover(from: answers), [prefix], "/\(vector.length)")
        }
        let wellKnown = [try XCTUnwrap(HTTPDNSIPAddress("64:ff9b::c000:aa"))]
        XCTAssertEqual(HTTPDNSNAT64Prefix.discover(from: wellKnown), [.wellKnown])
        XCTAssertEqual(HTTPDNSNAT64Prefix.wellKnown.description, "64:ff9b::/96")
    }

    func testNAT64DiscoveryIgnoresAnswersWithoutTheWellKnownAddresses() throws {
        let answers = ["2001:db8::1", "64:ff9b::c000:ab01", "2001:db8:122:344::c000:2ab", "192.0.0.170"].compactMap(HTTPDNSIPAddress.init)
        XCTAssertEqual(HTTPDNSNAT64Prefix.discover(from: answers), [])
        // A non-zero u octet or suffix is not an RFC 6052 address.
        let badU = try XCTUnwrap(HTTPDNSIPAddress("2001:db8:122:344:ffc0:0:aa00:0"))
        XCTAssertEqual(HTTPDNSNAT64Prefix.discover(from: [badU]), [])
        let badSuffix = try XCTUnwrap(HTTPDNSIPAddress("2001:db8:c000:aa::1"))
        XCTAssertEqual(HTTPDNSNAT64Prefix.discover(from: [badSuffix]), [])
    }

    func testNAT64PrefixRejectsInvalidLengthsAndKeepsNonGlobalIPv4WithTheWellKnownPrefix() throws {
        XCTAssertNil(HTTPDNSNAT64Prefix(try XCTUnwrap(HTTPDNSIPAddress("2001:db8::")), length: 33))
        XCTAssertNil(HTTPDNSNAT64Prefix(try XCTUnwrap(HTTPDNSIPAddress("192.0.2.1")), length: 96))
        let wellKnown = HTTPDNSNAT64Prefix.wellKnown
        let privateAddress = try XCTUnwrap(HTTPDNSIPAddress("10.1.2.3"))
        XCTAssertEqual(wellKnown.synthesize(privateAddress), privateAddress, "RFC 6052 section 3.1")
        let ipv6 = try XCTUnwrap(HTTPDNSIPAddress("2001:db8::5"))
        XCTAssertEqual(wellKnown.synthesize(ipv6), ipv6)
        XCTAssertEqual(wellKnown.synthesize(try XCTUnwrap(HTTPDNSIPAddress("198.51.100.10"))), HTTPDNSIPAddress("64:ff9b::c633:640a"))
    }
}
