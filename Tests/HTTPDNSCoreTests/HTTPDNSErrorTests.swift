import Foundation
import HTTPDNSCore
import XCTest

/// The direct client's article (`DirectClient.md`) promises that an error's `localizedDescription` is
/// "a short sentence an app can show".
final class HTTPDNSErrorTests: XCTestCase {
    /// Every code, with and without a host: a capital first, a full stop last, and neither the code's
    /// name nor the detail (those are for logs). A new code without a sentence fails here.
    func testEveryCodeHasASentence() {
        XCTAssertEqual(HTTPDNSError.Code.allCases.count, Set(HTTPDNSError.Code.allCases).count)
        XCTAssertTrue(HTTPDNSError.Code.allCases.contains(.unsupported))
        for code in HTTPDNSError.Code.allCases {
            for host in ["api.example.com", "example.com.", "x", nil] as [String?] {
                let error = HTTPDNSError(code, "provider's detail", host: host, source: "dnspod http://127.0.0.1:1")
                let sentence = error.localizedDescription
                XCTAssertTrue(sentence.first?.isUppercase == true, "\(code): \(sentence)")
                XCTAssertTrue(sentence.hasSuffix("."), "\(code): \(sentence)")
                XCTAssertFalse(sentence.contains("provider's detail") || sentence.contains("dnspod"), "\(code): \(sentence)")
                if code != .cancelled {
                    XCTAssertFalse(sentence.contains(code.description), "\(code): \(sentence)")
                }
                if let host, ![.cancelled, .invalidConfiguration, .unauthorized, .unsupported].contains(code) {
                    XCTAssertTrue(sentence.contains("“\(host)”"), "\(code): \(sentence)")
                }
            }
        }
    }

    func testSentencesNameTheHost() {
        XCTAssertEqual(HTTPDNSError(.nameNotFound, "NXDOMAIN", host: "x.test").localizedDescription, "The name “x.test” does not exist.")
        XCTAssertEqual(HTTPDNSError(.invalidHost, "bad", host: "a..b").localizedDescription, "The host name “a..b” is not valid.")
        XCTAssertEqual(HTTPDNSError(.timedOut, "no answer within 2 s").localizedDescription, "Looking up the name took too long.")
    }
}
