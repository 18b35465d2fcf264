import XCTest
final class HTTPDNSAcceptanceTestsPlaceholder: XCTestCase { func testBuilds() { XCTAssertTrue(true) } }
