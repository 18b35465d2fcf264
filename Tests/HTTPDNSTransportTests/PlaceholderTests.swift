import XCTest
final class HTTPDNSTransportTestsPlaceholder: XCTestCase { func testBuilds() { XCTAssertTrue(true) } }
