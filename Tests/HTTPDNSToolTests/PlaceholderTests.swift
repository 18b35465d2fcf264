import XCTest
final class HTTPDNSToolTestsPlaceholder: XCTestCase { func testBuilds() { XCTAssertTrue(true) } }
