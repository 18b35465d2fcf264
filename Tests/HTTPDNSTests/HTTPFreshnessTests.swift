import Foundation
@testable import HTTPDNS
import HTTPDNSTransport
import XCTest

/// RFC 9111 §4.2: an HTTPDNS answer stays fresh no longer than `max-age` minus `Age`.
final class HTTPFreshnessTests: XCTestCase {
    private func lifetime(_ headers: [(String, String)]) -> Int? {
        let head = HTTPTransportResponseHead(
            statusCode: 200, headers: headers.map { HTTPTransportHeader(name: $0.0, value: $0.1) }, connectedAddress: nil,
            httpVersion: "1.1")
        return HTTPDNSProvider.freshnessLifetime(HTTPTransportResponse(head: head, body: Data(), metrics: .init()))
    }

    func testDirectives() {
        XCTAssertEqual(lifetime([("Cache-Control", "public, max-age=40"), ("Age", "10")]), 30)
        XCTAssertEqual(lifetime([("cache-control", " MAX-AGE = 5 ,private")]), 5)
        XCTAssertEqual(lifetime([("Cache-Control", "max-age=5"), ("Age", "99")]), 0, "never negative")
        XCTAssertEqual(lifetime([("Cache-Control", "max-age=0")]), 0)
        XCTAssertNil(lifetime([("Cache-Control", "no-cache")]))
        XCTAssertNil(lifetime([]))
        XCTAssertNil(lifetime([("Cache-Control", "s-maxage=9")]))
        XCTAssertNil(lifetime([("Cache-Control", "max-age=-5")]))
        XCTAssertNil(lifetime([("Cache-Control", "max-age=abc")]))
        XCTAssertEqual(lifetime([("Cache-Control", "max-age=99999999999999999999999")]), 2_147_483_648, "RFC 9111 §1.2.2")
        XCTAssertNil(lifetime([("Cache-Control", "max\rage=5")]))
        XCTAssertEqual(lifetime([("Cache-Control", "max-age=60"), ("Age", "junk")]), 60, "a junk Age counts as 0")
    }

    func testMediaTypeComparison() {
        let type = "application/dns-message"
        for same in [type, "Application/DNS-Message", " application/dns-message ", "application/dns-message; charset=x",
                     "application/dns-message;", "\tapplication/dns-message"] {
            XCTAssertTrue(HTTPDNSProvider.mediaType(same, is: type), same)
            XCTAssertTrue(HTTPDNSProvider.mediaType(same, is: "APPLICATION/dns-message"), same)
        }
        for other in ["", "application/dns", "application/dns-messagex", "text/html", "application/dns-json",
                      "; application/dns-message"] {
            XCTAssertFalse(HTTPDNSProvider.mediaType(other, is: type), other)
        }
        XCTAssertEqual(HTTPDNSProvider.mediaType("Text/HTML; charset=utf-8"), "text/html")
    }
}
