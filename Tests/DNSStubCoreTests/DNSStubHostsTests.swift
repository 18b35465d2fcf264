import DNSWire
import DNSStubCore
import HTTPDNSCore
import XCTest

/// Static entries in /etc/hosts format: parsing (hostile lines named by number) and answers.
final class DNSStubHostsTests: XCTestCase {
    private typealias F = StubFixture

    private let text = """
        # comment line
        127.0.0.1\tlocalhost
        10.1.2.3   printer.lan Printer  # trailing comment
        2001:db8::5 printer.lan
        10.1.2.4 printer.lan\r
        ::1 localhost ip6-localhost

        """

    private func question(_ name: String, _ type: DNSRecordType) -> DNSQuestion {
        DNSQuestion(name: F.name(name), type: type)
    }

    func testAnswersAddressesNODATAAndPointers() throws {
        let hosts = try DNSStubHosts(parsing: text, source: "hosts")
        let a = try XCTUnwrap(hosts.answer(question("PRINTER.lan", .A)))
        XCTAssertEqual(a.rcode, .noError)
        XCTAssertEqual(a.answers.map(\.data), [.a([10, 1, 2, 3]), .a([10, 1, 2, 4])])
        XCTAssertEqual(a.answers.map(\.ttl), [60, 60])
        let aaaa = try XCTUnwrap(hosts.answer(question("printer.lan", .AAAA)))
        XCTAssertEqual(aaaa.answers.map(\.data), [.aaaa(HTTPDNSIPAddress("2001:db8::5")!.bytes)])
        XCTAssertEqual(hosts.answer(question("printer", .AAAA))?.answers, [], "NODATA: the name exists without IPv6")
        XCTAssertNil(hosts.answer(question("printer.lan", .MX)), "other types go on as usual")
        XCTAssertNil(hosts.answer(question("other.lan", .A)))
        let ptr = try XCTUnwrap(hosts.answer(question("3.2.1.10.in-addr.arpa", .PTR)))
        XCTAssertEqual(ptr.answers.map(\.data), [.ptr(F.name("printer.lan")), .ptr(F.name("Printer"))])
        let nibbles = "1.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.ip6.arpa"
        let ptr6 = try XCTUnwrap(hosts.answer(question(nibbles, .PTR)))
        XCTAssertEqual(ptr6.answers.map(\.data), [.ptr(F.name("localhost")), .ptr(F.name("ip6-localhost"))])
        XCTAssertNil(hosts.answer(DNSQuestion(name: F.name("printer.lan"), type: .A, recordClass: DNSRecordClass(3))), "class IN only")
    }

    func testMergeKeepsTheFirstFilesAddressesFirst() throws {
        var hosts = try DNSStubHosts(parsing: "10.0.0.1 a.lan\n", source: "one")
        hosts.merge(try DNSStubHosts(parsing: "10.0.0.2 a.lan\n10.0.0.1 a.lan\n", source: "two"))
        XCTAssertEqual(hosts.answer(question("a.lan", .A))?.answers.map(\.data), [.a([10, 0, 0, 1]), .a([10, 0, 0, 2])])
        XCTAssertTrue(DNSStubHosts().isEmpty)
        XCTAssertFalse(hosts.isEmpty)
    }

    func testBadLinesAreNamed() {
        let cases: [(String, String)] = [
            ("ok.lan 10.0.0.1\n", "line 1: 'ok.lan' is not an IP address"),
            ("\n10.0.0.256 a.lan\n", "line 2: '10.0.0.256' is not an IP address"),
            ("10.0.0.1\n", "line 1: no name after the address"),
            ("10.0.0.1 # only a comment\n", "line 1: no name after the address"),
            ("10.0.0.1 bad_name!.lan\n", "line 1: 'bad_name!.lan' is not a host name"),
            ("10.0.0.1 a..lan\n", "line 1: 'a..lan' is not a host name"),
            ("10.0.0.1 " + String(repeating: "a", count: 64) + ".lan\n", "is not a host name"),
            ("10.0.0.1 " + String(repeating: "a.", count: 3000) + "\n", "line 1: longer than 4096 bytes"),
            ("fe80::1%eth0 a.lan\n", "line 1: 'fe80::1%eth0' is not an IP address"),
        ]
        for (text, message) in cases {
            XCTAssertThrowsError(try DNSStubHosts(parsing: text, source: "/etc/hosts.test")) { error in
                let detail = (error as? HTTPDNSError)?.detail ?? "\(error)"
                XCTAssertEqual((error as? HTTPDNSError)?.code, .invalidConfiguration)
                XCTAssertTrue(detail.hasPrefix("/etc/hosts.test line"), detail)
                XCTAssertTrue(detail.contains(message), "\(detail) lacks \(message)")
            }
        }
    }
}
