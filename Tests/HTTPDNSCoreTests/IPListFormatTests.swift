import HTTPDNSCore
import XCTest

final class IPListFormatTests: XCTestCase {
    private func format(_ url: String = "http://127.0.0.1:8080/ips") -> IPListFormat {
        IPListFormat(configuration: .init(url: url))
    }

    private func parse(_ body: String, status: Int = 200) throws -> [HTTPDNSRecordSet] {
        let request = try format().request(for: ["www.example.com"], family: .both)
        return try format().parse(status: status, body: bytes(body), for: request)
    }

    func testRequestURLs() throws {
        XCTAssertEqual(try format().request(for: ["www.example.com"], family: .ipv4).url, "http://127.0.0.1:8080/ips?host=www.example.com")
        XCTAssertEqual(try format("https://ips.example/q?key=a%20b").request(for: ["A.com"], family: .ipv4).url, "https://ips.example/q?key=a%20b&host=a.com")
        XCTAssertEqual(try format("https://ips.example/q?").request(for: ["a.com"], family: .ipv4).url, "https://ips.example/q?host=a.com")
        XCTAssertEqual(try format("https://ips.example/q?k=1&").request(for: ["a.com"], family: .ipv4).url, "https://ips.example/q?k=1&host=a.com")
        XCTAssertEqual(try format("https://ips.example/q#frag").request(for: ["a.com"], family: .ipv4).url, "https://ips.example/q?host=a.com#frag")
        XCTAssertEqual(try format("https://ips.example/").request(for: ["a.com"], family: .ipv4).url, "https://ips.example/?host=a.com")
        assertThrowsCode(.invalidConfiguration) { try self.format("ips.example/q").request(for: ["a.com"], family: .ipv4) }
        assertThrowsCode(.unsupported) { try self.format().request(for: ["a.com", "b.com"], family: .ipv4) }
        XCTAssertEqual(try format().batchedRequests(for: ["a.com", "b.com"], family: .ipv4, now: 0).count, 2)
    }

    func testAnswers() throws {
        XCTAssertEqual(try parse(#"{"ips":["1.2.3.4","2400:3200::1","5.6.7.8"],"ttl":30}"#),
                       [HTTPDNSRecordSet(host: "www.example.com", ipv4: [ip("1.2.3.4"), ip("5.6.7.8")], ipv6: [ip("2400:3200::1")], ttl: 30)])
        XCTAssertEqual(try parse(#"{"ips":["1.2.3.4"]}"#), [HTTPDNSRecordSet(host: "www.example.com", ipv4: [ip("1.2.3.4")])])
        XCTAssertEqual(try parse(#" {"host":"WWW.example.com","ips":["::1"],"ttl":null,"extra":{"a":[1,2]}} "#),
                       [HTTPDNSRecordSet(host: "www.example.com", ipv6: [ip("::1")])])
        assertThrowsCode(.noAddress) { try self.parse(#"{"ips":[]}"#) }
        assertThrowsCode(.unauthorized) { try self.parse("", status: 401) }
        assertThrowsCode(.httpStatus) { try self.parse(#"{"ips":["1.2.3.4"]}"#, status: 404) }
    }

    func testMalformed() {
        let junk = [
            "", "[]", "{}", #"{"ips":"1.2.3.4"}"#, #"{"ips":[1]}"#, #"{"ips":["1.2.3"]}"#, #"{"ips":["1.2.3.4"],"ttl":-5}"#,
            #"{"ips":["1.2.3.4"],"ttl":"5"}"#, #"{"ips":["1.2.3.4"],"ttl":1e400}"#, #"{"ips":["1.2.3.4"],"host":"other.com"}"#,
            #"{"ips":["1.2.3.4"]"#, #"{"ips":["1.2.3.4\u0000"]}"#, "{\"ips\":[\"1.2.3.4\"]}\u{0}",
        ]
        for body in junk {
            assertThrowsCode(.malformedAnswer, body) { try self.parse(body) }
        }
        let many = "{\"ips\":[" + (0..<129).map { "\"1.1.1.\($0 % 256)\"" }.joined(separator: ",") + "]}"
        assertThrowsCode(.malformedAnswer) { try self.parse(many) }
        let huge = "{\"ips\":[" + Array(repeating: "\"1.1.1.1\"", count: 7000).joined(separator: ",") + "]}"
        XCTAssertGreaterThan(huge.utf8.count, 65_536)
        assertThrowsCode(.malformedAnswer) { try self.parse(huge) }
    }

    func testFuzz() throws {
        let request = try format().request(for: ["www.example.com"], family: .both)
        let body = bytes(#"{"host":"www.example.com","ips":["1.2.3.4","2400:3200::1"],"ttl":30}"#)
        let result = fuzz(body, seed: 41) { try self.format().parse(status: 200, body: $0, for: request) }
        XCTAssertGreaterThan(result.rejected, 100)
        XCTAssertGreaterThan(result.accepted, 0)
    }
}
