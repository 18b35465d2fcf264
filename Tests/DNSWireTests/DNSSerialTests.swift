import DNSWire
import XCTest

/// RFC 1982 serial number arithmetic, with the examples of RFC 1982 §5 carried over from their
/// small SERIAL_BITS to 32 bits (the same positions on the circle: 2^31 is the half-way point).
final class DNSSerialTests: XCTestCase {
    private let half: UInt32 = 1 << 31
    private let top: UInt32 = .max

    private func order(_ lhs: UInt32, _ rhs: UInt32) -> DNSSerial.Order { DNSSerial(lhs).compare(DNSSerial(rhs)) }

    func testRFC1982Section5_2TwoBitExamplesScaled() {
        // §5.2 (SERIAL_BITS = 2): 0 < 1, 1 < 2, 2 < 3, 3 < 0; 0 vs 2 and 1 vs 3 are undefined.
        // Scaled to 32 bits: the quarter points of the circle.
        let quarter: UInt32 = 1 << 30
        let points: [UInt32] = [0, quarter, 2 * quarter, 3 * quarter]
        for index in 0..<4 {
            XCTAssertEqual(order(points[index], points[(index + 1) % 4]), .less, "\(index)")
            XCTAssertEqual(order(points[(index + 1) % 4], points[index]), .greater, "\(index)")
            XCTAssertEqual(order(points[index], points[(index + 2) % 4]), .undefined, "\(index)")
        }
    }

    func testRFC1982Section5_1EightBitExamplesScaled() {
        // §5.1 (SERIAL_BITS = 8): 255 + 1 = 0, 100 + 100 = 200, 200 + 100 = 44; 0 < 44, 0 < 100,
        // 100 < 200, 200 < 255, 255 < 0, 255 < 100, 255 < 44? all hold since the gap is below 128.
        XCTAssertEqual(DNSSerial(top).adding(1), DNSSerial(0))
        XCTAssertEqual(DNSSerial(100).adding(100), DNSSerial(200))
        XCTAssertEqual(DNSSerial(top - 55).adding(100), DNSSerial(44))
        XCTAssertEqual(order(0, 44), .less)
        XCTAssertEqual(order(100, 200), .less)
        XCTAssertEqual(order(top, 0), .less)
        XCTAssertEqual(order(top, 100), .less)
        XCTAssertEqual(order(0, top), .greater)
        XCTAssertEqual(order(200, 100), .greater)
    }

    func testHalfWayIsUndefinedAndJustShortIsDefined() {
        XCTAssertEqual(order(0, half), .undefined)
        XCTAssertEqual(order(half, 0), .undefined)
        XCTAssertEqual(order(12_345, 12_345 &+ half), .undefined)
        XCTAssertEqual(order(0, half - 1), .less)
        XCTAssertEqual(order(0, half + 1), .greater)
        XCTAssertEqual(order(top, half - 1), .undefined)  // 2^31 steps ahead of 2^32 − 1
        XCTAssertEqual(order(top, half - 2), .less)
        XCTAssertEqual(order(top, half), .greater)
        XCTAssertFalse(DNSSerial(0).isLess(than: DNSSerial(half)))
        XCTAssertFalse(DNSSerial(0).isGreater(than: DNSSerial(half)))
    }

    func testEqualAndWrapAroundZoneSerials() {
        XCTAssertEqual(order(2_024_010_101, 2_024_010_101), .equal)
        XCTAssertTrue(DNSSerial(2_024_010_101).isLess(than: DNSSerial(2_024_010_102)))
        // An operator resetting a serial by adding 2^31 − 1 twice (RFC 1982 §7.1's procedure).
        let start = DNSSerial(4_000_000_000)
        let middle = start.adding(DNSSerial.maxIncrement)
        XCTAssertEqual(middle.map { start.compare($0) }, .less)
        XCTAssertNil(start.adding(half))
    }
}
