import Foundation
@testable import HTTPDNS
import HTTPDNSTransport
import XCTest

/// RFC 9111 §4.2: an HTTPDNS answer stays fresh no longer than `max-age` minus `Age`.
final class HTTPFreshnessTests: XCTestCase {
    private func lifetime(_ headers: [(String, String)]) -> Int? {
        let head = HTTPTransportResponseHead(
            statusCode: 200, headers: headers.map { HTTPHeader(name: $0.0, value: $0.1) }, connectedAddress: nil,
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
}
