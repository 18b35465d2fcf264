import Foundation
@testable import HTTPDNSCore
import DNSWire
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

    /// The query written from a host name's bytes equals the DNSWire encoding of the parsed name.
    func testQueryFromHostBytesMatchesDNSWire() throws {
        var generator = SeededGenerator(seed: 1035)
        let letters = Array("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_".utf8)
        var hosts = ["a", "www.example.com", String(repeating: "a", count: 63) + ".b"]
        for _ in 0..<500 {
            hosts.append((0..<Int.random(in: 1...6, using: &generator)).map { _ in
                String(decoding: (0..<Int.random(in: 1...20, using: &generator)).map { _ in letters.randomElement(using: &generator)! },
                       as: UTF8.self)
            }.joined(separator: "."))
        }
        for host in hosts {
            XCTAssertTrue(HTTPDNSHostPolicy.isValidHostName(host), host)
            for type in [DNSRecordType.A, .AAAA] {
                XCTAssertEqual(DoHWireFormat.query(host: host, type: type), DNSMessage.query(name: try DNSName(host), type: type, id: 0), host)
            }
        }
    }

    /// Issue 12, finding 1: a TTL with the top bit set is read as 0 (RFC 2181 §8), like every other
    /// format's TTL past 2^31-1, whether on the address or on a CNAME along the chain.
    func testTTLsFromTwoToTheThirtyFirstReadAsZero() throws {
        let request = try DoHWireFormat(url: "https://doh.test/dns-query").request(for: ["www.example.test"], family: .ipv4)
        let reproducer = unhex("00008180000100010000000003777777076578616d706c6504746573740000010001c00c00010001800000000004c0000201")
        let sets = try DoHWireFormat(url: "https://doh.test/dns-query").parse(status: 200, body: reproducer, for: request)
        XCTAssertEqual(sets, [HTTPDNSRecordSet(host: "www.example.test", ipv4: [ip("192.0.2.1")], ttl: 0)])
        for (aliasTTL, addressTTL, expected) in [(UInt32(300), UInt32(60), 60), (0x8000_0000, 60, 0), (300, 0xffff_ffff, 0), (0x7fff_ffff, 0x7fff_ffff, 0x7fff_ffff)] {
            let name = try DNSName("www.example.test"), edge = try DNSName("edge.example.net")
            var message = DNSMessage(questions: [DNSQuestion(name: name, type: .A)])
            message.isResponse = true
            message.answers = [
                DNSRecord(name: name, ttl: aliasTTL, data: .cname(edge)),
                DNSRecord(name: edge, ttl: addressTTL, data: .a([192, 0, 2, 1])),
            ]
            let parsed = try DoHWireFormat(url: "https://doh.test/dns-query").parse(status: 200, body: try message.encode(), for: request)
            XCTAssertEqual(parsed.first?.ttl, expected, "CNAME TTL \(aliasTTL), A TTL \(addressTTL)")
        }
    }

    func testQuestionNameComparison() throws {
        XCTAssertTrue(DoHWireFormat.name(try DNSName("WWW.Example.com."), is: "www.example.com"))
        XCTAssertTrue(DoHWireFormat.name(try DNSName("a"), is: "a"))
        for (name, host) in [("www.example.com", "www.example.co"), ("www.example.com", "www.example.comm"),
                             ("example.com", "www.example.com"), ("www.example.com", "example.com"), ("a.b", "ab")] {
            XCTAssertFalse(DoHWireFormat.name(try DNSName(name), is: host), "\(name) vs \(host)")
        }
        XCTAssertFalse(DoHWireFormat.name(try DNSName(labels: [Array("a.b".utf8)]), is: "a.b"), "a dot inside a label")
        XCTAssertFalse(DoHWireFormat.name(DNSName.root, is: "a"))
    }
}
