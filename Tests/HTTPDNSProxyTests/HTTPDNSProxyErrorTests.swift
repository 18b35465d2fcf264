import Foundation
import HTTPDNSLoopbackProxy
import XCTest

final class HTTPDNSProxyErrorTests: XCTestCase {
    /// Every code: `localizedDescription` is a sentence an app can show (a capital first, a full stop
    /// last, no code, no detail); `description` keeps the code and the detail for logs and the CLI.
    func testEveryCodeHasASentenceAndTheDescriptionKeepsTheDetail() {
        XCTAssertEqual(HTTPDNSProxyError.Code.allCases.count, 2)
        for code in HTTPDNSProxyError.Code.allCases {
            let error = HTTPDNSProxyError(code, "127.0.0.1:8118: Address already in use")
            let sentence = error.localizedDescription
            XCTAssertTrue(sentence.hasPrefix("The proxy "), "\(code): \(sentence)")
            XCTAssertTrue(sentence.hasSuffix("."), "\(code): \(sentence)")
            XCTAssertFalse(sentence.contains(code.description) || sentence.contains("8118"), "\(code): \(sentence)")
            XCTAssertEqual(error.description, "\(code): 127.0.0.1:8118: Address already in use")
        }
    }
}
