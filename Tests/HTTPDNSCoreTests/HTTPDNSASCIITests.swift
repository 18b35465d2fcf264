@_spi(HTTPDNSPackage) import HTTPDNSCore
import XCTest

/// The one ASCII case fold every module outside the networking one uses.
final class HTTPDNSASCIITests: XCTestCase {
    /// Exactly A-Z fold, byte by byte: the rule each former copy wrote out by hand.
    func testOnlyUpperCaseLettersFold() {
        for value in 0...255 {
            let byte = UInt8(value)
            let expected = (0x41...0x5A).contains(byte) ? byte + 0x20 : byte
            XCTAssertEqual(HTTPDNSASCII.lowercased(byte), expected, "byte \(value)")
        }
    }

    func testEqualityIgnoresASCIICaseOnly() {
        XCTAssertTrue(HTTPDNSASCII.equalsIgnoringCase("X-Forwarded-For", "x-forwarded-for"))
        XCTAssertTrue(HTTPDNSASCII.equalsIgnoringCase("", ""))
        XCTAssertFalse(HTTPDNSASCII.equalsIgnoringCase("host", "hostname"))
        XCTAssertFalse(HTTPDNSASCII.equalsIgnoringCase("hostname", "host"))
        // Bytes that differ only in bit 0x20 but are not letters stay different ("-" and CR, "^" and "~").
        XCTAssertFalse(HTTPDNSASCII.equalsIgnoringCase("a-b", "a\rb"))
        XCTAssertFalse(HTTPDNSASCII.equalsIgnoringCase("^", "~"))
        // No Unicode rules: the Kelvin sign is not "k", "É" is not "é".
        XCTAssertFalse(HTTPDNSASCII.equalsIgnoringCase("\u{212A}eep-alive", "keep-alive"))
        XCTAssertFalse(HTTPDNSASCII.equalsIgnoringCase("É", "é"))
        XCTAssertTrue(HTTPDNSASCII.equalsIgnoringCase("MAX-age".utf8.dropFirst(0), "max-age".utf8))
    }

    func testPrefixAndLowercasedText() {
        XCTAssertTrue(HTTPDNSASCII.hasPrefixIgnoringCase("HTTPS://a".utf8, "https://"))
        XCTAssertTrue(HTTPDNSASCII.hasPrefixIgnoringCase("http".utf8, ""))
        XCTAssertFalse(HTTPDNSASCII.hasPrefixIgnoringCase("http:/".utf8, "http://"))
        XCTAssertEqual(HTTPDNSASCII.lowercased("Application/DNS-Message; É".utf8), "application/dns-message; É")
    }
}
