import Foundation
import HTTPDNSCore
import HTTPDNSServer
import XCTest

final class HTTPDNSServiceErrorTests: XCTestCase {
    /// Every code: `localizedDescription` is a sentence an app can show (a capital first, a full stop
    /// last, no code, no detail); `description` keeps the code and the detail for logs and the CLI.
    func testEveryCodeHasASentenceAndTheDescriptionKeepsTheDetail() {
        XCTAssertEqual(HTTPDNSServiceError.Code.allCases.count, 3)
        for code in HTTPDNSServiceError.Code.allCases {
            let error = HTTPDNSServiceError(code, "zone.json:3:7: ttl must be 0...2147483647")
            let sentence = error.localizedDescription
            XCTAssertTrue(sentence.hasPrefix("The HTTPDNS service "), "\(code): \(sentence)")
            XCTAssertTrue(sentence.hasSuffix("."), "\(code): \(sentence)")
            XCTAssertFalse(sentence.contains(code.description) || sentence.contains("zone.json"), "\(code): \(sentence)")
            XCTAssertEqual(error.description, "\(code): zone.json:3:7: ttl must be 0...2147483647")
        }
    }
}
