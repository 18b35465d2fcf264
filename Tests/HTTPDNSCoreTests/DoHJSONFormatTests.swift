import HTTPDNSCore
import XCTest

final class DoHJSONFormatTests: XCTestCase {
    private let google = DoHJSONFormat(configuration: .init())

    private func parse(_ body: String, host: String = "example.com", family: HTTPDNSAddressFamily = .ipv6, status: Int = 200) throws -> [HTTPDNSRecordSet] {
        let request = try google.request(for: [host], family: family)
        return try google.parse(status: status, body: bytes(body), for: request)
    }

    func testRequests() throws {
        let request = try google.request(for: ["example.com"], family: .ipv6)
        XCTAssertEqual(request.url, "https://dns.google/resolve?name=example.com&type=AAAA")
        XCTAssertEqual(request.headers, ["accept": "application/dns-json"])
        XCTAssertEqual(request.method, "GET")
        let cloudflare = DoHJSONFormat(configuration: .init(url: "https://cloudflare-dns.com/dns-query"))
        XCTAssertEqual(try cloudflare.request(for: ["WWW.Example.com."], family: .ipv4).url, "https://cloudflare-dns.com/dns-query?name=www.example.com&type=A")
        let both = try google.requests(for: ["example.com"], family: .both, now: 0)
        XCTAssertEqual(both.map(\.url), ["https://dns.google/resolve?name=example.com&type=A", "https://dns.google/resolve?name=example.com&type=AAAA"])
        XCTAssertEqual(both.map(\.family), [.ipv4, .ipv6])
        assertThrowsCode(.unsupported) { try self.google.request(for: ["example.com"], family: .both) }
        assertThrowsCode(.unsupported) { try self.google.requests(for: ["a.com", "b.com"], family: .ipv4, now: 0) }
        let withQuery = DoHJSONFormat(configuration: .init(url: "http://127.0.0.1:8053/resolve?cd=1"))
        XCTAssertEqual(try withQuery.request(for: ["a.com"], family: .ipv4).url, "http://127.0.0.1:8053/resolve?cd=1&name=a.com&type=A")
    }

    func testGoldenAnswer() throws {
        // provider-apis.md, Google's example.
        let body = #"{"Status":0,"TC":false,"RD":true,"RA":true,"Question":[{"name":"example.com.","type":28}],"Answer":[{"name":"example.com.","type":28,"TTL":1726,"data":"2606:2800:220:1:248:1893:25c8:1946"}]}"#
        XCTAssertEqual(try parse(body), [HTTPDNSRecordSet(host: "example.com", ipv6: [ip("2606:2800:220:1:248:1893:25c8:1946")], ttl: 1726)])
    }

    func testCNAMEChain() throws {
        // Out of order on purpose, plus an unrelated A record that must not be used.
        let body = """
        {"Status":0,"Answer":[
          {"name":"b.example.org.","type":1,"TTL":600,"data":"1.2.3.4"},
          {"name":"evil.example.","type":1,"TTL":600,"data":"6.6.6.6"},
          {"name":"www.example.com.","type":5,"TTL":300,"data":"a.example.net."},
          {"name":"b.example.org.","type":1,"TTL":500,"data":" \\"5.6.7.8\\" "},
          {"name":"A.Example.NET.","type":5,"TTL":100,"data":"b.example.org."}
        ]}
        """
        XCTAssertEqual(try parse(body, host: "www.example.com", family: .ipv4),
                       [HTTPDNSRecordSet(host: "www.example.com", ipv4: [ip("1.2.3.4"), ip("5.6.7.8")], ttl: 100)])
        let dangling = #"{"Status":0,"Answer":[{"name":"www.example.com.","type":5,"TTL":300,"data":"a.example.net."}]}"#
        assertThrowsCode(.noAddress) { try self.parse(dangling, host: "www.example.com", family: .ipv4) }
        let loop = #"{"Status":0,"Answer":[{"name":"a.com.","type":5,"TTL":1,"data":"b.com."},{"name":"b.com.","type":5,"TTL":1,"data":"a.com."}]}"#
        assertThrowsCode(.malformedAnswer) { try self.parse(loop, host: "a.com", family: .ipv4) }
        let selfLoop = #"{"Status":0,"Answer":[{"name":"a.com.","type":5,"TTL":1,"data":"a.com."}]}"#
        assertThrowsCode(.malformedAnswer) { try self.parse(selfLoop, host: "a.com", family: .ipv4) }
        func chain(_ length: Int) -> String {
            var records = (0..<length).map { #"{"name":"h\#($0).com","type":5,"TTL":60,"data":"h\#($0 + 1).com"}"# }
            records.append(#"{"name":"h\#(length).com","type":1,"TTL":60,"data":"1.1.1.1"}"#)
            return #"{"Status":0,"Answer":[\#(records.joined(separator: ","))]}"#
        }
        XCTAssertEqual(try parse(chain(16), host: "h0.com", family: .ipv4).first?.ipv4, [ip("1.1.1.1")])
        assertThrowsCode(.malformedAnswer) { try self.parse(chain(17), host: "h0.com", family: .ipv4) }
        let badTarget = #"{"Status":0,"Answer":[{"name":"a.com.","type":5,"TTL":1,"data":"not a name"}]}"#
        assertThrowsCode(.malformedAnswer) { try self.parse(badTarget, host: "a.com", family: .ipv4) }
    }

    func testStatusCodes() {
        assertThrowsCode(.nameNotFound) { try self.parse(#"{"Status":3,"Question":[{"name":"example.com.","type":1}]}"#) }
        assertThrowsCode(.httpStatus) { try self.parse(#"{"Status":2}"#) }
        assertThrowsCode(.httpStatus) { try self.parse(#"{"Status":5}"#) }
        assertThrowsCode(.noAddress) { try self.parse(#"{"Status":0}"#) }
        assertThrowsCode(.noAddress) { try self.parse(#"{"Status":0,"Answer":[]}"#) }
        assertThrowsCode(.httpStatus) { try self.parse("", status: 500) }
        assertThrowsCode(.unauthorized) { try self.parse("", status: 403) }
    }

    func testMalformed() {
        let junk = [
            "", "{}", #"{"Status":"0"}"#, #"{"Status":0.5}"#, #"{"Status":0,"Answer":{}}"#,
            #"{"Status":0,"Answer":[{"name":"example.com.","type":28,"TTL":1,"data":"1.2.3.4"}]}"#,
            #"{"Status":0,"Answer":[{"name":"example.com.","type":28,"TTL":-1,"data":"::1"}]}"#,
            #"{"Status":0,"Answer":[{"name":"example.com.","type":28,"TTL":"1","data":"::1"}]}"#,
            #"{"Status":0,"Answer":[{"name":"example.com.","type":28,"TTL":1,"data":"::1 junk"}]}"#,
            #"{"Status":0,"Answer":[{"name":"example.com.","type":28,"TTL":1}]}"#,
            #"{"Status":0,"Answer":[{"name":"example.com.","type":28,"TTL":1,"data":"\"::1"}]}"#,
            #"{"Status":0,"Question":[{"name":"other.com.","type":28}],"Answer":[]}"#,
            "<html>captive portal</html>",
            String(repeating: "[", count: 100) + String(repeating: "]", count: 100),
        ]
        for body in junk {
            assertThrowsCode(.malformedAnswer, body) { try self.parse(body) }
        }
        let huge = #"{"Status":0,"Comment":""# + String(repeating: "x", count: 70 * 1024) + #""}"#
        assertThrowsCode(.malformedAnswer) { try self.parse(huge) }
    }

    func testFuzz() throws {
        let request = try google.request(for: ["www.example.com"], family: .ipv4)
        let body = bytes(#"{"Status":0,"Question":[{"name":"www.example.com.","type":1}],"Answer":[{"name":"www.example.com.","type":5,"TTL":300,"data":"a.example.net."},{"name":"a.example.net.","type":1,"TTL":60,"data":"1.2.3.4"}]}"#)
        let result = fuzz(body, seed: 31) { try self.google.parse(status: 200, body: $0, for: request) }
        XCTAssertGreaterThan(result.rejected, 100)
        XCTAssertGreaterThan(result.accepted, 0)
    }
}
