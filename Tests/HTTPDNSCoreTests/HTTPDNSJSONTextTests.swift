import Foundation
import HTTPDNSCore
import XCTest

final class HTTPDNSJSONTextTests: XCTestCase {
    func testQuoteEscapesWhatRFC8259Requires() throws {
        XCTAssertEqual(HTTPDNSJSONText.quote("plain"), "\"plain\"")
        XCTAssertEqual(HTTPDNSJSONText.quote("a\"b\\c\nd\re\tf"), #""a\"b\\c\nd\re\tf""#)
        XCTAssertEqual(HTTPDNSJSONText.quote("\u{0}\u{1f}"), #""\u0000\u001f""#)
        XCTAssertEqual(HTTPDNSJSONText.quote("ü/€"), "\"ü/€\"")
        // Whatever goes in comes back out of a real JSON parser.
        let nasty = "x\"\\\u{7}\u{1b}y\n"
        let parsed = try JSONSerialization.jsonObject(with: Data("[\(HTTPDNSJSONText.quote(nasty))]".utf8)) as? [String]
        XCTAssertEqual(parsed, [nasty])
    }
}
