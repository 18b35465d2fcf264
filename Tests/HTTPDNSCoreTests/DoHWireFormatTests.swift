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
