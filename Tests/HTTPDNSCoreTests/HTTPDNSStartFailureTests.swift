import HTTPDNSCore
import XCTest

/// The start failures the service's and the proxy's errors share.
final class HTTPDNSStartFailureTests: XCTestCase {
    func testEverySentenceNamesTheServerAndEndsWithAFullStop() {
        for failure in HTTPDNSStartFailure.allCases {
            for server in ["The HTTPDNS service", "The proxy"] {
                let sentence = failure.sentence(server: server)
                XCTAssertTrue(sentence.hasPrefix(server + " "), sentence)
                XCTAssertTrue(sentence.hasSuffix("."), sentence)
                XCTAssertFalse(sentence.contains(failure.rawValue), sentence)
            }
            XCTAssertEqual(failure.description(detail: "no listen address"), "\(failure.rawValue): no listen address")
        }
    }
}
