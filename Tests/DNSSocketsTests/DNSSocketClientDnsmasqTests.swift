import DNSSockets
import DNSWire
import HTTPDNSCore
import HTTPDNSTestSupport
import XCTest

/// The client against a real dnsmasq started by each test.
final class DNSSocketClientDnsmasqTests: XCTestCase {
    private var dnsmasq: Dnsmasq!
    private let timeout: Duration = .seconds(5)

    override func setUpWithError() throws {
        var configuration = Dnsmasq.Configuration()
        configuration.localDomains = ["example.test"]
        configuration.hostRecords = [("www.example.test", [HTTPDNSIPAddress("192.0.2.10")!, HTTPDNSIPAddress("2001:db8::10")!])]
        configuration.cnames = [("alias.example.test", "mid.example.test"), ("mid.example.test", "www.example.test")]
        // Three 250-byte strings: about 800 bytes, more than the 512 allowed without EDNS.
        configuration.txtRecords = [("big.example.test", ["a", "b", "c"].map { String(repeating: $0, count: 250) })]
        configuration.lie("bank.example.test", to: HTTPDNSIPAddress("127.0.0.99")!)
        dnsmasq = try Dnsmasq(configuration)
    }

    override func tearDown() {
        dnsmasq?.stop()
        dnsmasq = nil
    }

    private func resolve(_ name: String, _ type: DNSRecordType, client: DNSSocketClient = DNSSocketClient()) async throws -> DNSMessage {
        try await client.resolve(name, type: type, server: dnsmasq.address, port: dnsmasq.port, timeout: timeout)
    }

    func testA() async throws {
        let message = try await resolve("www.example.test", .A)
        XCTAssertEqual(message.rcode, .noError)
        XCTAssertEqual(message.answers.map(\.data), [.a([192, 0, 2, 10])])
        XCTAssertEqual(message.answers.first?.ttl, 300)
    }

    func testAAAA() async throws {
        let message = try await resolve("www.example.test.", .AAAA)
        XCTAssertEqual(message.answers.map(\.data), [.aaaa([0x20, 0x01, 0x0d, 0xb8] + Array(repeating: 0, count: 11) + [0x10])])
    }

    func testCNAMEChain() async throws {
        let message = try await resolve("alias.example.test", .A)
        let answer = message.addresses(for: try DNSName("alias.example.test"))
        XCTAssertEqual(answer.aliases.map(\.description), ["mid.example.test.", "www.example.test."])
        XCTAssertEqual(answer.addresses, [[192, 0, 2, 10]])
    }

    func testNXDOMAIN() async throws {
        let message = try await resolve("nope.example.test", .A)
        XCTAssertEqual(message.rcode, .nameError)
        do {
            _ = try await DNSSocketClient().lookupAddresses("nope.example.test", family: .both, server: dnsmasq.address, port: dnsmasq.port, timeout: timeout)
            XCTFail("expected nameNotFound")
        } catch let error as HTTPDNSError {
            XCTAssertEqual(error.code, .nameNotFound)
            XCTAssertEqual(error.host, "nope.example.test")
        }
    }

    func testLookupAddressesFollowsAliasesForBothFamilies() async throws {
        let lookup = try await DNSSocketClient().lookupAddresses(
            "alias.example.test", family: .both, server: dnsmasq.address, port: dnsmasq.port, timeout: timeout
        )
        XCTAssertEqual(lookup.addresses, [HTTPDNSIPAddress("192.0.2.10")!, HTTPDNSIPAddress("2001:db8::10")!])
        XCTAssertEqual(lookup.ttl, 300)
    }

    func testLyingServerPointsNameAndSubdomainsAtChosenAddress() async throws {
        for name in ["bank.example.test", "login.bank.example.test"] {
            let lookup = try await DNSSocketClient().lookupAddresses(name, family: .ipv4, server: dnsmasq.address, port: dnsmasq.port, timeout: timeout)
            XCTAssertEqual(lookup.addresses, [HTTPDNSIPAddress("127.0.0.99")!], name)
        }
    }

    /// Without EDNS the TXT answer cannot fit in 512 bytes: dnsmasq sets TC=1 and the client must
    /// get the whole answer over TCP.
    func testTruncatedAnswerIsRetriedOverTCP() async throws {
        var configuration = DNSSocketClient.Configuration()
        configuration.edns = nil
        configuration.tcpFallback = false
        let truncated = try await resolve("big.example.test", .TXT, client: DNSSocketClient(configuration: configuration))
        XCTAssertTrue(truncated.isTruncated, "dnsmasq should truncate over UDP; the TCP test proves nothing otherwise")

        configuration.tcpFallback = true
        let message = try await resolve("big.example.test", .TXT, client: DNSSocketClient(configuration: configuration))
        XCTAssertFalse(message.isTruncated)
        guard case .txt(let strings) = message.answers.first?.data else { return XCTFail("no TXT in \(message.answers)") }
        XCTAssertEqual(strings.map(\.count), [250, 250, 250])
        XCTAssertEqual(strings.last?.first, UInt8(ascii: "c"))
    }

    func testInvalidNameIsRejectedBeforeSending() async {
        do {
            _ = try await resolve("a..b", .A)
            XCTFail("expected invalidHost")
        } catch let error as HTTPDNSError {
            XCTAssertEqual(error.code, .invalidHost)
        } catch {
            XCTFail("unexpected \(error)")
        }
    }

    func testDnsmasqLauncherReportsAMissingBinary() {
        var configuration = Dnsmasq.Configuration()
        configuration.executable = "/nonexistent/dnsmasq"
        XCTAssertThrowsError(try Dnsmasq(configuration)) { error in
            XCTAssertTrue("\(error)".contains("dnsmasq-base"), "\(error)")
        }
    }
}
