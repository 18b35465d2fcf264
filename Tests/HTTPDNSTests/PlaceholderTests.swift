import XCTest
final class HTTPDNSTestsPlaceholder: XCTestCase { func testBuilds() { XCTAssertTrue(true) } }
