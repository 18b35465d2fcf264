import XCTest
final class HTTPDNSCoreTestsPlaceholder: XCTestCase { func testBuilds() { XCTAssertTrue(true) } }
