import HTTPDNSCore
import XCTest

/// Defects the in-repository fuzz targets found (issue 12), one test each; the inputs are also in
/// Fuzz/Corpus, replayed by FuzzCorpusTests.
final class HTTPDNSFuzzFindingsTests: XCTestCase {
    /// ip-address: `[2.0.2.1]` parsed as IPv4 while inet_pton refuses it; brackets belong to IPv6
    /// literals only (RFC 3986 §3.2.2).
    func testBracketsHoldIPv6Only() {
        for text in ["[2.0.2.1]", "[192.0.2.1]", "[0.0.0.0]"] {
            XCTAssertNil(HTTPDNSIPAddress(text), text)
            XCTAssertFalse(HTTPDNSIPAddress.isLiteral(text), text)
        }
        XCTAssertEqual(HTTPDNSIPAddress("[2001:db8::1]")?.description, "2001:db8::1")
        XCTAssertEqual(HTTPDNSIPAddress("[::ffff:192.0.2.1]")?.description, "::ffff:192.0.2.1")
    }
}
