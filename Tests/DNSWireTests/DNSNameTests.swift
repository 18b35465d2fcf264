import DNSWire
import XCTest

final class DNSNameTests: XCTestCase {
    func testTrailingDotAndCaseDoNotMatter() throws {
        let plain = try DNSName("WWW.Example.com")
        let dotted = try DNSName("www.example.COM.")
        XCTAssertEqual(plain, dotted)
        XCTAssertEqual(Set([plain, dotted]).count, 1)
        XCTAssertEqual(plain.text(), "WWW.Example.com")
        XCTAssertEqual(plain.description, "WWW.Example.com.")
        XCTAssertEqual(plain.wireLength, 17)
    }

    func testRoot() throws {
        XCTAssertEqual(try DNSName("."), .root)
        XCTAssertTrue(DNSName.root.isRoot)
        XCTAssertEqual(DNSName.root.description, ".")
        XCTAssertEqual(DNSName.root.text(), ".")
        XCTAssertEqual(DNSName.root.wireLength, 1)
    }

    func testOddBytesAreEscapedAndParseBack() throws {
        let name = try DNSName(labels: [[0x61, 0x2E, 0x62], [0x20, 0x5C, 0xFF], Array("com".utf8)])
        let text = name.text()
        XCTAssertEqual(text, "a\\.b.\\032\\\\\\255.com")
        let parsed = try DNSName(text)
        XCTAssertEqual(parsed.labels, name.labels)
    }

    func testRejectsEmptyLabelsAndBadEscapes() {
        for text in ["", "a..b", ".a", "a\\", "a\\25", "a\\256", "a\\2x5"] {
            XCTAssertThrowsError(try DNSName(text), text) {
                XCTAssertEqual(($0 as? DNSWireError)?.code, .invalidName, text)
            }
        }
    }

    func testLengthLimits() throws {
        let label63 = String(repeating: "a", count: 63)
        XCTAssertNoThrow(try DNSName(label63 + ".com"))
        XCTAssertThrowsError(try DNSName(label63 + "a.com")) {
            XCTAssertEqual(($0 as? DNSWireError)?.code, .labelTooLong)
        }
        // 4 labels of 63 = 4 * 64 + 1 = 257 octets: too long. 3 * 64 + 62 + 1 = 255: fits.
        let fits = [label63, label63, label63, String(repeating: "b", count: 61)].joined(separator: ".")
        XCTAssertEqual(try DNSName(fits).wireLength, 255)
        let tooLong = [label63, label63, label63, label63].joined(separator: ".")
        XCTAssertThrowsError(try DNSName(tooLong)) { XCTAssertEqual(($0 as? DNSWireError)?.code, .nameTooLong) }
    }

    func testHostNameSyntax() throws {
        XCTAssertEqual(try DNSName(hostName: "api.example-1.com."), try DNSName("api.example-1.com"))
        XCTAssertNoThrow(try DNSName(hostName: "_dmarc.example.com"))
        for bad in ["", ".", "a..b", "-a.com", "a-.com", "a b.com", "a/b", "exa\u{e9}mple.com", "a.com..", "a\\.b"] {
            XCTAssertThrowsError(try DNSName(hostName: bad), bad)
        }
    }

    func testSubdomainAndParent() throws {
        let name = try DNSName("www.Example.com")
        XCTAssertTrue(name.isSubdomain(of: try DNSName("example.COM")))
        XCTAssertTrue(name.isSubdomain(of: .root))
        XCTAssertFalse(name.isSubdomain(of: try DNSName("ample.com")))
        XCTAssertEqual(name.parent, try DNSName("example.com"))
        XCTAssertEqual(DNSName.root.parent, .root)
    }
}
