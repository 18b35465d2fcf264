import Foundation
import XCTest

/// Loads the dnsmasq captures in Fixtures (see Fixtures/README.md for their source).
enum Fixture: String, CaseIterable {
    case wwwA = "www-a"
    case wwwAAAA = "www-aaaa"
    case cnameChainA = "cname-chain-a"
    case multiA = "multi-a"
    case nxdomainSOA = "nxdomain-soa"

    func bytes(file: StaticString = #filePath, line: UInt = #line) throws -> [UInt8] {
        let url = try XCTUnwrap(
            Bundle.module.url(forResource: rawValue, withExtension: "bin", subdirectory: "Fixtures"),
            "fixture \(rawValue).bin missing from the test bundle", file: file, line: line
        )
        return Array(try Data(contentsOf: url))
    }
}

/// Parses `"00 01 ab"`-style hex, as the golden vectors are written.
func hexBytes(_ text: String) -> [UInt8] {
    text.split(separator: " ").map { UInt8($0, radix: 16)! }
}
