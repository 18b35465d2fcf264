import XCTest
final class DNSSocketsTestsPlaceholder: XCTestCase { func testBuilds() { XCTAssertTrue(true) } }
