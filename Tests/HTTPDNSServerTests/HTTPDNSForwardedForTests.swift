import HTTPDNSCore
import HTTPDNSServer
import XCTest

final class HTTPDNSForwardedForTests: XCTestCase {
    private func address(_ text: String) -> HTTPDNSIPAddress { HTTPDNSIPAddress(text)! }

    func testTrustedProxyBlocks() throws {
        let trusted = try HTTPDNSTrustedProxies(["10.0.0.0/8", "::1/128", "192.0.2.10", "2001:db8:100::/40, 0.0.0.0/0"])
        XCTAssertEqual(trusted.blocks.map(\.description), ["10.0.0.0/8", "::1/128", "192.0.2.10/32", "2001:db8:100::/40", "0.0.0.0/0"])
        let narrow = try HTTPDNSTrustedProxies(["10.0.0.0/8", "::1/128", "192.0.2.10", "2001:db8:100::/40"])
        XCTAssertTrue(narrow.contains(address("10.255.1.2")))
        XCTAssertTrue(narrow.contains(address("::ffff:10.0.0.1")), "IPv4-mapped peers of a dual-stack socket")
        XCTAssertFalse(narrow.contains(address("11.0.0.1")))
        XCTAssertTrue(narrow.contains(address("::1")))
        XCTAssertFalse(narrow.contains(address("::2")))
        XCTAssertTrue(narrow.contains(address("192.0.2.10")))
        XCTAssertFalse(narrow.contains(address("192.0.2.11")))
        XCTAssertTrue(narrow.contains(address("2001:db8:1ff:ffff::1")))
        XCTAssertFalse(narrow.contains(address("2001:db8:200::1")))
        XCTAssertFalse(narrow.contains(address("127.0.0.1")))
        XCTAssertTrue(trusted.contains(address("203.0.113.1")), "/0 covers its family")
        XCTAssertFalse(trusted.contains(address("2001:db9::1")))
        XCTAssertTrue(HTTPDNSTrustedProxies().isEmpty)
        XCTAssertFalse(HTTPDNSTrustedProxies().contains(address("127.0.0.1")))
    }

    func testBadBlocksAreClearErrors() {
        for (text, mentions) in [("10.0.0.1/8", "bits set past /8"), ("10.0.0.0/33", "0...32"), ("::1/129", "0...128"),
                                 ("10.0.0.0/08", "0...32"), ("10.0.0.0/+8", "0...32"), ("10.0.0.0/", "0...32"),
                                 ("localhost", "not an address"), ("[::1]/128", "not an address"), ("10.0.0.0/8/8", "0...32")] {
            XCTAssertThrowsError(try HTTPDNSTrustedProxies([text]), text) { error in
                let error = error as? HTTPDNSServiceError
                XCTAssertEqual(error?.code, .invalidConfiguration, text)
                XCTAssertTrue(error?.detail.contains(mentions) == true, "\(text): \(String(describing: error))")
            }
        }
    }

    func testTheRightmostUntrustedHopIsTheClient() throws {
        let trusted = try HTTPDNSTrustedProxies(["10.0.0.0/8"])
        func client(_ peer: String, _ values: [String]) -> String {
            HTTPDNSForwardedFor.client(peer: address(peer), values: values, trusted: trusted).description
        }
        // An untrusted peer's header is ignored whatever it says.
        XCTAssertEqual(client("203.0.113.9", ["198.51.100.1"]), "203.0.113.9")
        XCTAssertEqual(client("10.0.0.1", []), "10.0.0.1")
        XCTAssertEqual(client("10.0.0.1", ["203.0.113.7"]), "203.0.113.7")
        // The client prepended a forged entry: the balancer's own entry (rightmost untrusted) wins.
        XCTAssertEqual(client("10.0.0.1", ["198.51.100.1, 203.0.113.7, 10.0.0.2"]), "203.0.113.7")
        // Several header lines are one list.
        XCTAssertEqual(client("10.0.0.1", ["198.51.100.1", "203.0.113.7,10.0.0.2"]), "203.0.113.7")
        // Every hop trusted: the leftmost.
        XCTAssertEqual(client("10.0.0.1", ["10.1.1.1, 10.0.0.2"]), "10.1.1.1")
        // Junk stops the walk at the trusted hop that wrote it.
        XCTAssertEqual(client("10.0.0.1", ["203.0.113.7, unknown, 10.0.0.2"]), "10.0.0.2")
        XCTAssertEqual(client("10.0.0.1", ["\u{1b}[31m"]), "10.0.0.1")
        XCTAssertEqual(client("10.0.0.1", ["203.0.113.7:5678"]), "203.0.113.7")
        XCTAssertEqual(client("10.0.0.1", ["[2001:db8::5]:443"]), "2001:db8::5")
        XCTAssertEqual(client("10.0.0.1", ["2001:db8::5"]), "2001:db8::5")
        XCTAssertEqual(client("10.0.0.1", ["[2001:db8::5]"]), "2001:db8::5")
        XCTAssertEqual(client("10.0.0.1", ["203.0.113.7:99999"]), "10.0.0.1")
        XCTAssertEqual(client("10.0.0.1", ["[192.0.2.1]:80"]), "10.0.0.1")
        XCTAssertEqual(client("10.0.0.1", ["203.0.113.7, , "]), "203.0.113.7")
        XCTAssertEqual(client("::ffff:10.0.0.1", ["203.0.113.7"]), "203.0.113.7")
        // Bounded: past 32 entries the search stops at the last trusted hop.
        let many = (0..<100).map { "10.0.0.\($0 % 250 + 1)" }.joined(separator: ",")
        XCTAssertEqual(client("10.0.0.1", ["203.0.113.7," + many]), "10.0.0.\(68 % 250 + 1)")
    }
}
