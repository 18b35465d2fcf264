import HTTPDNSCore
import XCTest

/// Issue 12, finding 2 (the core half): normalising drops one trailing dot only from a name that
/// ends in exactly one, so `www..` stays invalid instead of becoming the valid `www.`.
final class HTTPDNSHostNameTrailingDotTests: XCTestCase {
    func testTwoTrailingDotsStayInvalid() {
        for raw in ["www..", "t..", "A.TEST..", "a...", "..", "é.."] {
            let name = HTTPDNSHostPolicy.normalize(raw)
            XCTAssertFalse(HTTPDNSHostPolicy.isValidHostName(name), "\(raw) normalised to \(name)")
            XCTAssertEqual(HTTPDNSHostPolicy.normalize(name), name, "not idempotent for \(raw)")
        }
    }

    func testOneTrailingDotIsStillDropped() {
        XCTAssertEqual(HTTPDNSHostPolicy.normalize("WWW.Example.COM."), "www.example.com")
        XCTAssertEqual(HTTPDNSHostPolicy.normalize("a."), "a")
        XCTAssertEqual(HTTPDNSHostPolicy.normalize("Ü.example."), "ü.example")
        XCTAssertEqual(HTTPDNSHostPolicy.normalize("."), "")
        XCTAssertTrue(HTTPDNSHostPolicy.isValidHostName(HTTPDNSHostPolicy.normalize("www.example.test.")))
    }
}
