import XCTest
final class DNSWireTestsPlaceholder: XCTestCase { func testBuilds() { XCTAssertTrue(true) } }
