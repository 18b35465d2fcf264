import Foundation
import HTTPDNSCore
@_spi(HTTPDNSPackage) import HTTPDNSOperations
@testable import HTTPDNSServer
import HTTPDNSTestSupport
import XCTest

/// The CIDR list reader and the longest-prefix table behind views: pure values, no sockets.
final class HTTPDNSNetworkListTests: XCTestCase {
    private func parse(_ text: String) throws -> [String] {
        try HTTPDNSNetworkList.parse(Array(text.utf8), source: "list.txt").map(\.description)
    }

    private func failure(_ text: String) -> String {
        do {
            _ = try HTTPDNSNetworkList.parse(Array(text.utf8), source: "list.txt")
            return "accepted"
        } catch {
            XCTAssertEqual(error.code, .invalidConfiguration)
            return error.detail
        }
    }

    func testAListReadsNetworksCommentsBlankLinesAndCRLF() throws {
        let text = "# carrier A, 2026-01\r\n1.0.1.0/24\r\n\r\n  240e::/20   # IPv6 block\n192.0.2.7\n2001:db8::1\n::ffff:10.0.0.0/104\n\t# indented comment\n"
        XCTAssertEqual(try parse(text), ["1.0.1.0/24", "240e::/20", "192.0.2.7/32", "2001:db8::1/128", "10.0.0.0/8"])
        XCTAssertEqual(try parse(""), [])
        XCTAssertEqual(try parse("10.0.0.0/8"), ["10.0.0.0/8"], "no final newline")
        XCTAssertEqual(try parse("0.0.0.0/0\n::/0"), ["0.0.0.0/0", "::/0"])
    }

    func testEveryBadLineIsRefusedWithFileLineAndReason() {
        XCTAssertEqual(failure("10.0.0.0/8\n10.0.0.1/8\n"), "list.txt:2: address has bits set past /8: \"10.0.0.1/8\"")
        XCTAssertEqual(failure("10.0.0.0/33"), "list.txt:1: prefix length must be 0...32: \"10.0.0.0/33\"")
        XCTAssertEqual(failure("2001:db8::/129"), "list.txt:1: prefix length must be 0...128: \"2001:db8::/129\"")
        XCTAssertEqual(failure("# ok\n\nhello"), "list.txt:3: not an IP address or CIDR network: \"hello\"")
        for bad in ["10.0.0.0/", "10.0.0.0/08", "10.0.0.0/+8", "10.0.0.0/-1", "10.0.0.0/8/8", "[::1]/128", "10.0.0.0 /8",
                    "10.0.0.0/8 junk", "010.0.0.0/8", "10.0.0/8", "1.2.3.4.5", "::1%eth0", "10.0.0.0/8\u{0}", "ＡＢ", "/8"] {
            let detail = failure(bad)
            XCTAssertTrue(detail.hasPrefix("list.txt:1: "), "\(bad): \(detail)")
        }
        let long = String(repeating: "1", count: 2_000)
        XCTAssertEqual(failure(long), "list.txt:1: line longer than 1024 bytes")
    }

    func testAListFileIsReadWholeAndNamedInErrors() throws {
        let path = NSTemporaryDirectory() + "views-list-\(UUID().uuidString).txt"
        defer { try? FileManager.default.removeItem(atPath: path) }
        try Data("10.1.0.0/16\n10.2.0.0/16\n".utf8).write(to: URL(fileURLWithPath: path))
        XCTAssertEqual(try HTTPDNSNetworkList.read(path: path).map(\.description), ["10.1.0.0/16", "10.2.0.0/16"])
        XCTAssertThrowsError(try HTTPDNSNetworkList.read(path: path + ".missing")) { error in
            XCTAssertEqual((error as? HTTPDNSServiceError)?.detail, "\(path).missing: cannot read the list")
        }
    }

    // MARK: - Longest-prefix table

    private func table(_ networks: [(String, String)]) throws -> HTTPDNSPrefixTable<String> {
        var table = HTTPDNSPrefixTable<String>()
        for (network, value) in networks { table.insert(try HTTPDNSNetwork(network), value) }
        return table
    }

    private func lookup(_ table: HTTPDNSPrefixTable<String>, _ address: String) -> (String?, Int, Int) {
        let match = table.lookup(HTTPDNSIPAddress(address)!)
        return (match.value, match.prefixLength, match.scope)
    }

    func testTheLongestPrefixWinsAndTheScopeIsTheMatchWhenNothingLiesInside() throws {
        let table = try table([("10.0.0.0/8", "outer"), ("10.1.0.0/16", "inner"), ("10.1.2.3/32", "host"),
                               ("2001:db8::/32", "v6"), ("2001:db8:1::/48", "v6-inner")])
        XCTAssertTrue(lookup(table, "10.1.2.3") == ("host", 32, 32))
        // 10.1.9.9 leaves 10.1.2.3's path inside 10.1/16 at bit 20 (10.1.0000_1001 vs 10.1.0000_0010).
        XCTAssertTrue(lookup(table, "10.1.9.9") == ("inner", 16, 21))
        // 10.2.3.4 leaves 10.1/16's path at bit 14: scope 15, and 10.2.0.0/15 holds nothing of 10.1/16.
        XCTAssertTrue(lookup(table, "10.2.3.4") == ("outer", 8, 15))
        // 10.200.0.1 differs from 10.1/16 at bit 8: scope 9.
        XCTAssertTrue(lookup(table, "10.200.0.1") == ("outer", 8, 9))
        XCTAssertTrue(lookup(table, "11.0.0.1") == (nil, 0, 8))
        XCTAssertTrue(lookup(table, "2001:db8:1::5") == ("v6-inner", 48, 48))
        XCTAssertTrue(lookup(table, "2001:db8:8000::5") == ("v6", 32, 33))
        XCTAssertTrue(lookup(table, "::ffff:10.1.2.3") == ("host", 32, 32), "IPv4-mapped IPv6 matches IPv4")
        XCTAssertEqual(table.lookup(HTTPDNSIPAddress("::ffff:10.1.2.3")!).family, .v4)
        // Alone, a network's clients get its own length as scope.
        let alone = try self.table([("10.0.0.0/8", "a"), ("192.168.0.0/16", "b")])
        XCTAssertTrue(lookup(alone, "10.9.9.9") == ("a", 8, 8))
        XCTAssertTrue(lookup(alone, "192.168.1.1") == ("b", 16, 16))
        XCTAssertTrue(lookup(HTTPDNSPrefixTable<String>(), "10.0.0.1") == (nil, 0, 0))
    }

    func testTheFirstValueOfANetworkListedTwiceIsKept() throws {
        let table = try table([("10.0.0.0/8", "first"), ("10.0.0.0/8", "second"), ("0.0.0.0/0", "all")])
        XCTAssertEqual(table.count, 2)
        XCTAssertTrue(lookup(table, "10.0.0.1") == ("first", 8, 8))
        XCTAssertTrue(lookup(table, "11.0.0.1") == ("all", 0, 8))
    }

    /// The scope is right by its definition: across `address/scope` the table answers the same, and
    /// (when longer than the match) one bit less would take in an address answered otherwise.
    func testTheScopeHoldsForRandomTablesAgainstABruteForceMatch() throws {
        var generator = TestRandom()
        for _ in 0..<20 {
            var networks: [HTTPDNSNetwork] = []
            var table = HTTPDNSPrefixTable<Int>()
            for index in 0..<60 {
                let address = HTTPDNSIPAddress(bytes: [10, UInt8.random(in: 0...3, using: &generator), UInt8.random(in: 0...255, using: &generator), 0])!
                let network = HTTPDNSNetwork(address: address, prefixLength: Int.random(in: 8...24, using: &generator))
                networks.append(network)
                table.insert(network, index)
            }
            func brute(_ address: HTTPDNSIPAddress) -> Int? {
                var best: (Int, Int)?
                for (index, network) in networks.enumerated() where network.contains(address) {
                    if best == nil || network.prefixLength > best!.0 { best = (network.prefixLength, index) }
                }
                // The table keeps the first value of a network listed twice.
                guard let best else { return nil }
                return networks.firstIndex { $0 == networks[best.1] }
            }
            for _ in 0..<200 {
                let address = HTTPDNSIPAddress(bytes: [10, UInt8.random(in: 0...3, using: &generator), UInt8.random(in: 0...255, using: &generator), UInt8.random(in: 0...255, using: &generator)])!
                let match = table.lookup(address)
                XCTAssertEqual(match.value, brute(address), "\(address) with \(generator)")
                let inside = HTTPDNSNetwork(address: address, prefixLength: match.scope)
                for _ in 0..<8 {
                    let (high, _) = inside.address.words
                    let spread = match.scope >= 32 ? 0 : UInt64.random(in: 0..<(UInt64(1) << UInt64(32 - match.scope)), using: &generator)
                    let other = HTTPDNSIPAddress(words: high | spread << 32, 0, family: .v4)
                    XCTAssertEqual(table.lookup(other).value, match.value, "\(other) inside \(inside) with \(generator)")
                }
            }
        }
    }

    func testTenThousandPrefixesLookUpFast() throws {
        var table = HTTPDNSPrefixTable<Int>()
        for index in 0..<10_000 {
            let address = HTTPDNSIPAddress(bytes: [UInt8(1 + index / 256 % 200), UInt8(index % 256), UInt8(index / 51_200), 0])!
            table.insert(HTTPDNSNetwork(address: address, prefixLength: 24), index)
            table.insert(HTTPDNSNetwork(address: HTTPDNSIPAddress(bytes: [0x24, 0x0e, UInt8(index >> 8), UInt8(index & 0xff)] + [UInt8](repeating: 0, count: 12))!, prefixLength: 32), index)
        }
        XCTAssertEqual(table.count, 20_000)
        let addresses = (0..<1_000).map { HTTPDNSIPAddress(bytes: [UInt8(1 + $0 % 200), UInt8($0 % 256), 0, 9])! }
        let clock = ContinuousClock()
        var found = 0
        let elapsed = clock.measure {
            for _ in 0..<100 {
                for address in addresses where table.lookup(address).value != nil { found += 1 }
            }
        }
        XCTAssertGreaterThan(found, 0)
        // 100,000 lookups; a debug build walks ~24 nodes each in well under a microsecond.
        XCTAssertLessThan(elapsed, .seconds(2), "\(elapsed)")
    }
}
