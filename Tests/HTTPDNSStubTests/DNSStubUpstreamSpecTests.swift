import HTTPDNSCore
import HTTPDNSStub
import XCTest

/// `--upstream` texts as values: `dot=IP[:PORT]#NAME` with its default port, IPv6 forms, and the
/// refusals (no NAME, a name instead of an IP, an IP or junk as NAME), beside the older kinds;
/// `doq=IP[:PORT]#NAME` the same way, its errors naming its kind.
final class DNSStubUpstreamSpecTests: XCTestCase {
    func testDoTLocations() throws {
        let cases: [(String, String, String)] = [
            ("dot=127.0.0.1#dns.example.test", "127.0.0.1:853", "dns.example.test"),
            ("dot=127.0.0.1:8853#dns.example.test", "127.0.0.1:8853", "dns.example.test"),
            ("DOT=10.0.0.1#DNS.Example.Test.", "10.0.0.1:853", "dns.example.test"),
            ("dot=::1#one.one.one.one", "[::1]:853", "one.one.one.one"),
            ("dot=[::1]#dns.test", "[::1]:853", "dns.test"),
            ("dot=[2001:db8::53]:8853#dns.test", "[2001:db8::53]:8853", "dns.test"),
        ]
        for (text, server, name) in cases {
            let spec = try DNSStubUpstreamSpec(parsing: text)
            XCTAssertEqual(spec.kind, .dot, text)
            let (address, serverName) = try DNSStubUpstreamSpec.dotLocation(spec.location)
            XCTAssertEqual("\(address)", server, text)
            XCTAssertEqual(serverName, name, text)
        }
        XCTAssertEqual(DNSStubUpstreamSpec.dotPort, 853, "RFC 7858 §3.1")
    }

    func testBadDoTLocationsAreRefused() {
        let cases: [(String, String)] = [
            ("dot=127.0.0.1", "IP[:PORT]#NAME"),
            ("dot=127.0.0.1:853", "IP[:PORT]#NAME"),
            ("dot=dns.example.test#dns.example.test", "IP address"),
            ("dot=127.0.0.1:0#dns.test", "IP address"),
            ("dot=127.0.0.1:99999#dns.test", "IP address"),
            ("dot=127.0.0.1#127.0.0.1", "host name"),
            ("dot=127.0.0.1#", "host name"),
            ("dot=127.0.0.1#bad name.test", "host name"),
            ("dot=127.0.0.1#-bad.test", "host name"),
        ]
        for (text, expected) in cases {
            XCTAssertThrowsError(try DNSStubUpstreamSpec(parsing: text), text) { error in
                let error = error as? HTTPDNSError
                XCTAssertEqual(error?.code, .invalidConfiguration, text)
                XCTAssertTrue(error?.detail.contains(expected) == true, "\(text): \(String(describing: error))")
            }
        }
    }

    func testDoQLocations() throws {
        let cases: [(String, String, String)] = [
            ("doq=127.0.0.1#dns.example.test", "127.0.0.1:853", "dns.example.test"),
            ("DOQ=127.0.0.1:8853#DNS.Example.Test.", "127.0.0.1:8853", "dns.example.test"),
            ("doq=[2001:db8::53]:784#dns.test", "[2001:db8::53]:784", "dns.test"),
        ]
        for (text, server, name) in cases {
            let spec = try DNSStubUpstreamSpec(parsing: text)
            XCTAssertEqual(spec.kind, .doq, text)
            let (address, serverName) = try DNSStubUpstreamSpec.encryptedLocation(spec.location, kind: .doq)
            XCTAssertEqual("\(address)", server, text)
            XCTAssertEqual(serverName, name, text)
        }
        XCTAssertEqual(DNSStubUpstreamSpec.doqPort, 853, "RFC 9250 §4.1.1")
        XCTAssertEqual(try DNSStubUpstreamSpec(parsing: "doq=127.0.0.1#dns.test").makeUpstream(transport: nil).name, "doq=127.0.0.1:853#dns.test")
        for (text, expected) in [("doq=127.0.0.1", "doq upstream needs IP[:PORT]#NAME"), ("doq=127.0.0.1#10.0.0.1", "doq upstream's NAME")] {
            XCTAssertThrowsError(try DNSStubUpstreamSpec(parsing: text), text) { error in
                XCTAssertTrue((error as? HTTPDNSError)?.detail.contains(expected) == true, "\(text): \(error)")
            }
        }
    }

    func testUnknownKindNamesTheThree() {
        XCTAssertThrowsError(try DNSStubUpstreamSpec(parsing: "tls=127.0.0.1#dns.test")) { error in
            XCTAssertTrue((error as? HTTPDNSError)?.detail.contains("udp, doh, dot, doq") == true, "\(error)")
        }
        XCTAssertThrowsError(try DNSStubUpstreamSpec(parsing: "127.0.0.1")) { error in
            XCTAssertTrue((error as? HTTPDNSError)?.detail.contains("dot=IP[:PORT]#NAME") == true, "\(error)")
        }
    }

    func testOlderKindsStillParse() throws {
        XCTAssertEqual(try DNSStubUpstreamSpec(parsing: "udp=127.0.0.1:53").kind, .udp)
        XCTAssertEqual(try DNSStubUpstreamSpec(parsing: "doh=https://dns.example.test/dns-query").kind, .doh)
        XCTAssertEqual(try DNSStubUpstreamSpec(parsing: "dot=127.0.0.1#dns.test").description, "dot=127.0.0.1#dns.test")
    }
}
