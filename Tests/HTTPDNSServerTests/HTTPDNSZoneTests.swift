import Foundation
import HTTPDNSCore
import HTTPDNSServer
import XCTest

final class HTTPDNSZoneTests: XCTestCase {
    private func zone(_ json: String) throws -> HTTPDNSZone {
        try HTTPDNSZone(json: Data(json.utf8))
    }

    private func assertInvalid(_ json: String, mentions: String, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertThrowsError(try zone(json), file: file, line: line) { error in
            guard let error = error as? HTTPDNSServiceError else {
                return XCTFail("not an HTTPDNSServiceError: \(error)", file: file, line: line)
            }
            XCTAssertEqual(error.code, .invalidZone, file: file, line: line)
            XCTAssertTrue(error.detail.contains(mentions), "\(error.detail) lacks \(mentions)", file: file, line: line)
        }
    }

    func testParsesNamesCaseInsensitivelyWithOptionalTrailingDot() throws {
        let parsed = try zone(#"{"WWW.Example.TEST.": {"A": ["192.0.2.1"], "aaaa": ["2001:DB8::1"], "Ttl": 42}, "b.test": {"A": []}}"#)
        let match = try XCTUnwrap(parsed.match("www.example.test"))
        XCTAssertEqual(match.key, "www.example.test")
        XCTAssertEqual(match.entry.ipv4, [HTTPDNSIPAddress("192.0.2.1")!])
        XCTAssertEqual(match.entry.ipv6, [HTTPDNSIPAddress("2001:db8::1")!])
        XCTAssertEqual(match.entry.ttl, 42)
        XCTAssertEqual(parsed.match("WWW.EXAMPLE.test.")?.key, "www.example.test")
        XCTAssertEqual(parsed.match("b.test")?.entry.ttl, HTTPDNSZone.defaultTTL)
        XCTAssertNil(parsed.match("other.example.test"))
    }

    func testDefaultTTLCanBeChosen() throws {
        let parsed = try HTTPDNSZone(json: Data(#"{"a.test": {"A": ["192.0.2.1"]}}"#.utf8), defaultTTL: 7)
        XCTAssertEqual(parsed.match("a.test")?.entry.ttl, 7)
    }

    func testWildcardsMatchBelowTheirBaseClosestFirstAndStopAtExistingNames() throws {
        let parsed = try zone("""
            {"*.example.test": {"A": ["192.0.2.1"]}, "*.deep.example.test": {"A": ["192.0.2.2"]},
             "www.example.test": {"A": ["192.0.2.3"]}}
            """)
        XCTAssertEqual(parsed.match("a.example.test")?.key, "*.example.test")
        XCTAssertEqual(parsed.match("x.y.example.test")?.key, "*.example.test")
        XCTAssertEqual(parsed.match("a.deep.example.test")?.key, "*.deep.example.test")
        XCTAssertEqual(parsed.match("www.example.test")?.key, "www.example.test")
        // RFC 4592 §3.3.1: www exists, so the wildcard above it does not cover names below it.
        XCTAssertNil(parsed.match("a.www.example.test"))
        XCTAssertNil(parsed.match("example.test"))
        XCTAssertTrue(parsed.isApex("example.test"))
        XCTAssertEqual(parsed.apex(for: "nothing.example.test"), "example.test")
        XCTAssertEqual(parsed.apex(for: "a.deep.example.test"), "deep.example.test")
        XCTAssertNil(parsed.apex(for: "example.org"))
    }

    func testCNAMEEntries() throws {
        let parsed = try zone(#"{"alias.test": {"CNAME": "Target.Test."}, "target.test": {"A": ["192.0.2.1"]}}"#)
        XCTAssertEqual(parsed.match("alias.test")?.entry.cname, "target.test")
    }

    func testInvalidJSON() {
        assertInvalid("{", mentions: "not valid JSON")
        assertInvalid("", mentions: "not valid JSON")
        assertInvalid("[1, 2]", mentions: "wrong type")
        assertInvalid(#"{"a.test": ["192.0.2.1"]}"#, mentions: "\"a.test\"")
        assertInvalid(#"{"a.test": {"A": "192.0.2.1"}}"#, mentions: "wrong type")
        assertInvalid(#"{"a.test": {"ttl": "60"}}"#, mentions: "wrong type")
        assertInvalid(#"{"a.test": {"ttl": 1.5}}"#, mentions: "\"a.test\"")
    }

    func testBadAddresses() {
        assertInvalid(#"{"a.test": {"A": ["300.1.1.1"]}}"#, mentions: "\"300.1.1.1\" is not an IPv4 address")
        assertInvalid(#"{"a.test": {"A": ["2001:db8::1"]}}"#, mentions: "not an IPv4 address")
        assertInvalid(#"{"a.test": {"AAAA": ["192.0.2.1"]}}"#, mentions: "not an IPv6 address")
        assertInvalid(#"{"a.test": {"A": ["localhost"]}}"#, mentions: "\"a.test\"")
        let many = (0..<65).map { "\"192.0.2.\($0)\"" }.joined(separator: ",")
        assertInvalid(#"{"a.test": {"A": [\#(many)]}}"#, mentions: "more than 64 addresses")
    }

    func testBadNamesAndMembers() {
        assertInvalid(#"{"a..test": {"A": ["192.0.2.1"]}}"#, mentions: "not a valid host name")
        assertInvalid(#"{"-a.test": {}}"#, mentions: "not a valid host name")
        assertInvalid(#"{"192.0.2.1": {}}"#, mentions: "not a valid host name")
        assertInvalid(#"{"a.*.test": {}}"#, mentions: "not a valid host name")
        assertInvalid(#"{"": {}}"#, mentions: "not a valid host name")
        assertInvalid(#"{"\#(String(repeating: "a", count: 64)).test": {}}"#, mentions: "not a valid host name")
        assertInvalid(#"{"a.test": {"A": [], "MX": []}}"#, mentions: "unknown member \"MX\"")
        assertInvalid(#"{"a.test": {}, "A.TEST.": {}}"#, mentions: "listed twice")
        assertInvalid(#"{"a.test": {"ttl": -1}}"#, mentions: "ttl must be")
        assertInvalid(#"{"a.test": {"CNAME": "b.test", "A": ["192.0.2.1"]}}"#, mentions: "CNAME cannot have addresses")
        assertInvalid(#"{"a.test": {"CNAME": "a.test"}}"#, mentions: "CNAME to itself")
        assertInvalid(#"{"a.test": {"CNAME": "not a name"}}"#, mentions: "is not a host name")
    }

    func testFileLoading() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("zone-\(UUID().uuidString).json").path
        try Data(#"{"a.test": {"A": ["192.0.2.1"]}}"#.utf8).write(to: URL(fileURLWithPath: path))
        defer { try? FileManager.default.removeItem(atPath: path) }
        XCTAssertEqual(try HTTPDNSZone(contentsOfFile: path).entries.count, 1)
        XCTAssertThrowsError(try HTTPDNSZone(contentsOfFile: path + ".missing")) { error in
            XCTAssertEqual((error as? HTTPDNSServiceError)?.code, .invalidZone)
        }
    }

    func testEveryTruncationOfAZoneFailsCleanly() {
        let json = Array(#"{"a.test": {"A": ["192.0.2.1"], "AAAA": ["2001:db8::1"], "ttl": 5}}"#.utf8)
        for length in 0..<json.count {
            XCTAssertThrowsError(try HTTPDNSZone(json: Data(json[..<length])), "length \(length)")
        }
    }
}
