import HTTPDNSCore
import XCTest

final class HTTPDNSHostPolicyTests: XCTestCase {
    func testExactAndWildcardPatterns() {
        let policy = HTTPDNSHostPolicy(["API.example.com.", "*.cdn.example.com"])
        XCTAssertTrue(policy.protects("api.example.com"))
        XCTAssertTrue(policy.protects("Api.Example.Com."))
        XCTAssertFalse(policy.protects("www.example.com"))
        XCTAssertTrue(policy.protects("img.cdn.example.com"))
        XCTAssertTrue(policy.protects("a.b.cdn.example.com"))
        XCTAssertFalse(policy.protects("cdn.example.com"), "a wildcard does not cover its own apex")
        XCTAssertFalse(policy.protects("xcdn.example.com"))
        XCTAssertFalse(HTTPDNSHostPolicy.none.protects("api.example.com"))
    }

    func testIPLiteralsAreNeverProtected() {
        XCTAssertFalse(HTTPDNSHostPolicy.all.protects("192.0.2.1"))
        XCTAssertFalse(HTTPDNSHostPolicy.all.protects("2001:db8::1"))
        XCTAssertFalse(HTTPDNSHostPolicy.all.protects("[2001:db8::1]"))
        XCTAssertFalse(HTTPDNSHostPolicy.all.protects(""))
        XCTAssertTrue(HTTPDNSHostPolicy.all.protects("example.com"))
    }

    func testNormalize() {
        XCTAssertEqual(HTTPDNSHostPolicy.normalize("www.example.com"), "www.example.com")
        XCTAssertEqual(HTTPDNSHostPolicy.normalize("WWW.Example.COM."), "www.example.com")
        XCTAssertEqual(HTTPDNSHostPolicy.normalize("a.b."), "a.b")
        XCTAssertEqual(HTTPDNSHostPolicy.normalize("ÄÖ.Example."), "äö.example")
        // Every ASCII byte, upper and lower case, with and without the trailing dot: the byte path
        // agrees with Unicode lower-casing.
        var generator = SeededGenerator(seed: 1035)
        for _ in 0..<2_000 {
            let text = String(decoding: (0..<Int.random(in: 0...12, using: &generator)).map { _ in
                UInt8.random(in: 0x20...0x7e, using: &generator)
            }, as: UTF8.self) + (Bool.random(using: &generator) ? "." : "")
            var expected = text.lowercased()
            if expected.hasSuffix("."), !expected.hasSuffix("..") { expected.removeLast() }
            XCTAssertEqual(HTTPDNSHostPolicy.normalize(text), expected, text)
        }
    }

    /// Issue 12 finding 2: normalising dropped one of two trailing dots, so `www..` became the valid
    /// absolute name `www.` (a zone key stored under `www.`, a CNAME to `t..` followed to `t`).
    func testTwoTrailingDotsStayInvalidAfterNormalising() {
        for text in ["www..", "T..", "a.b...", "ÄÖ..", ".."] {
            let name = HTTPDNSHostPolicy.normalize(text)
            XCTAssertTrue(name.hasSuffix(".."), "\(text) → \(name)")
            XCTAssertFalse(HTTPDNSHostPolicy.isValidHostName(name), name)
        }
        XCTAssertEqual(HTTPDNSHostPolicy.normalize("WWW.."), "www..")
        XCTAssertEqual(HTTPDNSHostPolicy.normalize("."), "")
    }

    func testHostNameSyntax() {
        for good in ["a", "example.com", "example.com.", "_dmarc.example.com", "xn--bcher-kva.example", "A-1.b-2.C3",
                     String(repeating: "a", count: 63) + ".com"] {
            XCTAssertTrue(HTTPDNSHostPolicy.isValidHostName(good), good)
        }
        let long = Array(repeating: String(repeating: "a", count: 50), count: 6).joined(separator: ".")  // 305 bytes
        for bad in ["", ".", "..", "a..b", ".a", "a.b..", "-a.com", "a-.com", "a.-b", "bad host", "a/b", "a@b", "ü.com",
                    String(repeating: "a", count: 64) + ".com", long] {
            XCTAssertFalse(HTTPDNSHostPolicy.isValidHostName(bad), bad)
        }
    }
}
