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

    /// Seeded random mutations of real answers: every result is a value or an error, never a crash
    /// (the debug build the suite runs checks every buffer read).
    func testMutatedDocumentsNeverCrash() {
        let seeds = [
            #"{"Status":0,"Question":[{"name":"a.example.","type":1}],"Answer":[{"name":"a.example.","type":1,"TTL":60,"data":"192.0.2.1"}]}"#,
            #"{"host":"a.example","ips":["192.0.2.1"],"ipsv6":["2001:db8::1"],"ttl":60,"esc":"\u00e9\n\ud83d\ude00"}"#,
        ].map { Array($0.utf8) }
        var generator = SeededGenerator(seed: 8259)
        let alphabet = Array(#"{}[]":,\u0123456789eE+-.tfnrul "#.utf8) + [0x00, 0x7f, 0x80, 0xc3, 0xff]
        var parsed = 0
        for _ in 0..<20_000 {
            var bytes = seeds.randomElement(using: &generator)!
            for _ in 0..<Int.random(in: 1...4, using: &generator) {
                let position = Int.random(in: 0..<bytes.count, using: &generator)
                switch Int.random(in: 0..<3, using: &generator) {
                case 0: bytes[position] = alphabet.randomElement(using: &generator)!
                case 1: bytes.insert(alphabet.randomElement(using: &generator)!, at: position)
                default: if bytes.count > 1 { bytes.remove(at: position) }
                }
            }
            if (try? HTTPDNSJSON.parse(bytes, source: "test")) != nil { parsed += 1 }
        }
        XCTAssertGreaterThan(parsed, 0, "some mutations are still valid JSON")
        XCTAssertLessThan(parsed, 20_000, "most mutations are not")
    }

    func testQueryEncoding() {
        XCTAssertEqual(HTTPDNSURLQuery.encode("a b&c=d/é~-._"), "a%20b%26c%3Dd%2F%C3%A9~-._")
        XCTAssertEqual(HTTPDNSURLQuery.encode("a,b"), "a%2Cb")
        XCTAssertEqual(HTTPDNSURLQuery.encode("a,b", keep: [UInt8(ascii: ",")]), "a,b")
        var query = HTTPDNSURLQuery()
        query.add("dn", "a.com")
        query.add("ttl", "1")
        XCTAssertEqual(query.appended(to: "http://s/d"), "http://s/d?dn=a.com&ttl=1")
        XCTAssertEqual(query.appended(to: "http://s/d?"), "http://s/d?dn=a.com&ttl=1")
        XCTAssertEqual(query.appended(to: "http://s/d?x=1"), "http://s/d?x=1&dn=a.com&ttl=1")
        XCTAssertEqual(query.appended(to: "http://s/d?x=1&"), "http://s/d?x=1&dn=a.com&ttl=1")
        XCTAssertEqual(query.appended(to: "http://s/d#top"), "http://s/d?dn=a.com&ttl=1#top")
        XCTAssertEqual(HTTPDNSURLQuery().appended(to: "http://s/d#top"), "http://s/d#top")
    }

    func testServiceBaseURLs() throws {
        XCTAssertEqual(try HTTPDNSURLQuery.checkedBase("HTTPS://Service.Example/", source: "t"), "HTTPS://Service.Example")
        XCTAssertEqual(try HTTPDNSURLQuery.checkedBase("http://s.example/api///", source: "t"), "http://s.example/api")
        XCTAssertEqual(try HTTPDNSURLQuery.checkedBase("http://s.example/api", source: "t"), "http://s.example/api")
        XCTAssertEqual(try HTTPDNSURLQuery.checkedBase("http://", source: "t"), "http://")
        for bad in ["ftp://s.example", "http:/s.example", "s.example", "http://a b", "http://a\u{7f}", "htt", "",
                    "http://" + String(repeating: "a", count: 2050)] {
            XCTAssertThrowsError(try HTTPDNSURLQuery.checkedBase(bad, source: "t"), bad)
        }
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
