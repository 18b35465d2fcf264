@testable import HTTPDNSCore
import XCTest

final class HTTPDNSJSONTests: XCTestCase {
    private func parse(_ text: String) throws -> HTTPDNSJSON {
        try HTTPDNSJSON.parse(bytes(text), source: "test")
    }

    func testValues() throws {
        XCTAssertEqual(try parse(#" {"a":[1,-2,3.5,1e3,true,false,null,"x"],"b":{}} "#), .object([
            "a": .array([.number("1"), .number("-2"), .number("3.5"), .number("1e3"), .bool(true), .bool(false), .null, .string("x")]),
            "b": .object([:]),
        ]))
        XCTAssertEqual(try parse("0").intValue, 0)
        XCTAssertEqual(try parse("-12").intValue, -12)
        XCTAssertNil(try parse("1.0").intValue)
        XCTAssertNil(try parse("1E2").intValue)
        XCTAssertNil(try parse("99999999999999999999").intValue)
        XCTAssertNil(try parse("\"1\"").intValue)
    }

    func testDuplicateKeysAreRejectedInSmallAndLargeObjects() throws {
        let keys = (0..<40).map { "\"k\($0)\":\($0)" }
        let large = try parse("{" + keys.joined(separator: ",") + "}")
        XCTAssertEqual(large["k39"]?.intValue, 39)
        XCTAssertEqual(large["k0"]?.intValue, 0)
        XCTAssertNil(large["k40"])
        for duplicate in ["\"k3\":0", "\"k39\":0"] {
            for position in [5, 20, 40] {
                var members = keys
                members.insert(duplicate, at: position)
                XCTAssertThrowsError(try parse("{" + members.joined(separator: ",") + "}"), "\(duplicate) at \(position)")
            }
        }
        XCTAssertEqual(try parse(#"{"a":1,"b":2}"#), try parse(#"{"b":2,"a":1}"#), "member order does not matter")
        XCTAssertNotEqual(try parse(#"{"a":1,"b":2}"#), try parse(#"{"a":1,"b":3}"#))
    }

    func testStringEscapes() throws {
        XCTAssertEqual(try parse(#""a\"b\\c\/d\b\f\n\r\t""#), .string("a\"b\\c/d\u{8}\u{c}\n\r\t"))
        XCTAssertEqual(try parse(#""\u00e9\u4e2d\ud83d\ude00""#), .string("é中😀"))
        XCTAssertEqual(try parse("\"é中\""), .string("é中"))
    }

    func testRejects() {
        let junk = [
            "", " ", "{", "}", "[1,]", "[,1]", "{\"a\"}", "{\"a\":}", "{a:1}", "{\"a\":1,}", "01", "-", "1.", ".5", "1e", "+1",
            "tru", "nul", "\"abc", #""\x""#, #""\u12""#, #""\ud800""#, #""\ud800\u0041""#, #""\udc00""#, "\"a\u{1}b\"",
            "[1] [2]", "{\"a\":1,\"a\":2}", "'a'", "NaN", "Infinity",
            String(repeating: "[", count: 33) + String(repeating: "]", count: 33),
        ]
        for text in junk {
            assertThrowsCode(.malformedAnswer, text.debugDescription) { try self.parse(text) }
        }
        assertThrowsCode(.malformedAnswer) { try HTTPDNSJSON.parse([0x22, 0xff, 0x22], source: "t") }
        assertThrowsCode(.malformedAnswer) { try HTTPDNSJSON.parse([0x22, 0xc3, 0x22], source: "t") }
        assertThrowsCode(.malformedAnswer) { try HTTPDNSJSON.parse([UInt8](repeating: 0x20, count: 65_537), source: "t") }
        XCTAssertNoThrow(try parse(String(repeating: "[", count: 31) + String(repeating: "]", count: 31)))
    }

    func testEveryTruncationFails() {
        let document = bytes(#"{"host":"www.aliyun.com","ips":["1.2.3.4"],"ipsv6":["2400:3200::1"],"ttl":57,"origin_ttl":120,"client_ip":"42.120.74.1"}"#)
        XCTAssertNoThrow(try HTTPDNSJSON.parse(document, source: "t"))
        for length in 0..<document.count {
            assertThrowsCode(.malformedAnswer, "prefix \(length)") { try HTTPDNSJSON.parse(Array(document[0..<length]), source: "t") }
        }
    }

    func testQueryEncoding() {
        XCTAssertEqual(HTTPDNSURLQuery.encode("a b&c=d/é~-._"), "a%20b%26c%3Dd%2F%C3%A9~-._")
        XCTAssertEqual(HTTPDNSURLQuery.encode("a,b"), "a%2Cb")
        XCTAssertEqual(HTTPDNSURLQuery.encode("a,b", keep: [UInt8(ascii: ",")]), "a,b")
    }

    func testMergeRecordSets() {
        let merged = HTTPDNSRecordSets.merge([
            HTTPDNSRecordSet(host: "a.com", ipv4: [ip("1.1.1.1")], ttl: 300),
            HTTPDNSRecordSet(host: "b.com", ipv4: [ip("2.2.2.2")]),
            HTTPDNSRecordSet(host: "a.com", ipv4: [ip("1.1.1.1"), ip("3.3.3.3")], ipv6: [ip("2400::1")], ttl: 60, clientIP: "9.9.9.9"),
        ])
        XCTAssertEqual(merged, [
            HTTPDNSRecordSet(host: "a.com", ipv4: [ip("1.1.1.1"), ip("3.3.3.3")], ipv6: [ip("2400::1")], ttl: 60, clientIP: "9.9.9.9"),
            HTTPDNSRecordSet(host: "b.com", ipv4: [ip("2.2.2.2")]),
        ])
    }
}
