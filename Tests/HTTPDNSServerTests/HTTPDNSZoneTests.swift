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

    // MARK: - Load-time rejection with positions (issue 9) and the issue 12 reproducers

    func testBadJSONNamesLineAndColumnOfTheFault() {
        let json = "{\n  \"a.test\": {\"A\": [\"192.0.2.1\"]},\n  \"b.test\": {\"A\": [}\n}"
        assertInvalid(json, mentions: "zone:3:20: not valid JSON")
        // Columns count characters, not bytes: é is two bytes and one column.
        assertInvalid("{\"é\": {}, x}", mentions: "zone:1:11: not valid JSON: expected a key")
        assertInvalid("{", mentions: "zone:1:2: not valid JSON")
        assertInvalid("\n\n  [1, 2]", mentions: "zone:3:3: wrong type")
    }

    func testPositionsOfOffsets() {
        let bytes = Array("ab\r\ncé\nd".utf8)
        XCTAssertTrue(HTTPDNSZoneFile.position(of: 0, in: bytes) == (1, 1))
        XCTAssertTrue(HTTPDNSZoneFile.position(of: 2, in: bytes) == (1, 3))  // the CR
        XCTAssertTrue(HTTPDNSZoneFile.position(of: 4, in: bytes) == (2, 1))
        XCTAssertTrue(HTTPDNSZoneFile.position(of: 7, in: bytes) == (2, 3))  // the LF after é
        XCTAssertTrue(HTTPDNSZoneFile.position(of: 8, in: bytes) == (3, 1))
        XCTAssertTrue(HTTPDNSZoneFile.position(of: 999, in: bytes) == (3, 2))
    }

    /// Issue 12 finding 3: exact duplicates were kept silently (one of them), by JSONSerialization.
    func testExactDuplicateNamesAndMembersAreRejectedWithTheirPosition() {
        let json = "{\n\"a.test\": {\"A\": [\"192.0.2.1\"]},\n\"a.test\": {\"A\": [\"192.0.2.2\"]}\n}"
        assertInvalid(json, mentions: "zone:3:1: not valid JSON: duplicate key")
        assertInvalid(#"{"a.test": {"A": [], "A": []}}"#, mentions: "zone:1:22: not valid JSON: duplicate key")
        assertInvalid(#"{"a.test": {"A": [], "a": []}}"#, mentions: "zone:1:2: \"a.test\": member \"a\" listed twice")
    }

    /// Issue 12 finding 3: names differing only in case loaded with a random winner.
    func testNamesDifferingOnlyInCaseAreRejectedEveryTime() {
        let json = #"{"a.test":{"A":["192.0.2.1"]},"A.TEST":{"A":["192.0.2.2"]}}"#
        for _ in 0..<20 {
            assertInvalid(json, mentions: #"zone:1:31: "A.TEST": name listed twice (first at 1:2); names are case-insensitive"#)
        }
        XCTAssertThrowsError(try HTTPDNSZone(entries: ["a.test": .init(), "A.Test.": .init()])) { error in
            XCTAssertTrue((error as? HTTPDNSServiceError)?.detail.contains("listed twice") == true, "\(error)")
        }
    }

    /// Issue 12 finding 2: `www..` was stored as `www.` (never matching), a CNAME to `t..` loaded as `t.`.
    func testNamesEndingInTwoDotsAreRejected() throws {
        assertInvalid(#"{"www..":{"A":["192.0.2.1"]}}"#, mentions: #"zone:1:2: "www..": not a valid host name"#)
        assertInvalid(#"{"a":{"CNAME":"t.."}}"#, mentions: #"zone:1:2: a: CNAME "t.." is not a host name"#)
        assertInvalid(#"{"*.a..":{"A":["192.0.2.1"]}}"#, mentions: "not a valid host name")
        // One trailing dot is the absolute form and stays accepted.
        XCTAssertEqual(try zone(#"{"www.":{"A":["192.0.2.1"]}, "b": {"CNAME": "www."}}"#).match("b")?.entry.cname, "www")
    }

    /// Issue 9: a CNAME loop loaded, then answered 502 `upstream failed` with no upstream configured.
    func testCNAMELoopsAreRejectedAtLoad() {
        assertInvalid(#"{"a.test": {"CNAME": "b.test"}, "b.test": {"CNAME": "A.test."}}"#,
                      mentions: #"zone:1:2: "a.test": CNAME loop a.test → b.test → a.test"#)
        // Through a wildcard: the target falls under the wildcard itself.
        assertInvalid(#"{"*.w.test": {"CNAME": "x.w.test"}}"#, mentions: "CNAME loop *.w.test → *.w.test")
        // A loop reached from a chain that does not start in it.
        assertInvalid(#"{"a.test": {"CNAME": "b.test"}, "b.test": {"CNAME": "c.test"}, "c.test": {"CNAME": "b.test"}}"#,
                      mentions: "CNAME loop b.test → c.test → b.test")
    }

    func testCNAMEChainsAreBoundedAtLoad() throws {
        func chain(_ links: Int) -> String {
            let aliases = (0..<links).map { #""n\#($0).test": {"CNAME": "n\#($0 + 1).test"}"# }
            return "{" + (aliases + [#""n\#(links).test": {"A": ["192.0.2.1"]}"#]).joined(separator: ",\n") + "}"
        }
        XCTAssertEqual(try zone(chain(HTTPDNSZone.maxCNAMEChain)).entries.count, HTTPDNSZone.maxCNAMEChain + 1)
        assertInvalid(chain(HTTPDNSZone.maxCNAMEChain + 1), mentions: "zone:1:2: \"n0.test\": CNAME chain of 9 links, at most 8")
        // A chain leaving the zone counts only its links inside it.
        XCTAssertNoThrow(try zone(#"{"a.test": {"CNAME": "b.test"}, "b.test": {"CNAME": "elsewhere.example"}}"#))
        // A long zone of chains sharing a tail is walked once per name (no quadratic blow-up to fail on).
        let fan = (0..<2_000).map { #""f\#($0).test": {"CNAME": "n0.test"}"# }.joined(separator: ",")
        XCTAssertThrowsError(try zone("{" + fan + "," + chain(8).dropFirst()))
        XCTAssertNoThrow(try zone("{" + fan + "," + chain(7).dropFirst()))
    }

    func testSemanticErrorsNameTheEntryPositionAndTheFile() throws {
        assertInvalid("{\n  \"a.test\": {\"A\": [\"300.1.1.1\"]}}", mentions: "zone:2:3: \"a.test\": \"300.1.1.1\" is not an IPv4 address")
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("zone-\(UUID().uuidString).json").path
        try Data("{\"a.test\": {\"A\": [\"192.0.2.1\"]},\n \"a.test\": {}}".utf8).write(to: URL(fileURLWithPath: path))
        defer { try? FileManager.default.removeItem(atPath: path) }
        XCTAssertThrowsError(try HTTPDNSZone(contentsOfFile: path)) { error in
            XCTAssertEqual((error as? HTTPDNSServiceError)?.detail, "\(path):2:2: not valid JSON: duplicate key")
        }
    }
}
