import Foundation
import HTTPDNSCore
import XCTest

final class DoHWireFormatTests: XCTestCase {
    /// RFC 8484 §6's example query, and base64url against Foundation's base64 with the URL alphabet
    /// and no padding, for every length up to 100 and seeded random bytes.
    func testBase64URL() {
        let query: [UInt8] = [
            0, 0, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 3, 119, 119, 119, 7, 101, 120, 97, 109, 112, 108, 101, 3, 99,
            111, 109, 0, 0, 1, 0, 1,
        ]
        XCTAssertEqual(DoHWireFormat.base64URL(query), "AAABAAABAAAAAAAAA3d3dwdleGFtcGxlA2NvbQAAAQAB")
        XCTAssertEqual(DoHWireFormat.base64URL([]), "")
        var generator = SeededGenerator(seed: 4648)
        for length in 0...100 {
            let bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let reference = Data(bytes).base64EncodedString()
                .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
                .replacingOccurrences(of: "=", with: "")
            XCTAssertEqual(DoHWireFormat.base64URL(bytes), reference, "length \(length)")
        }
    }
}
