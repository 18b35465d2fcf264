import DNSWire
import Foundation
import DNSZoneTransfer
import HTTPDNSCore
import HTTPDNSTestSupport
import XCTest

/// Knot's own parser (`kdig -G`, Knot DNS 3.2) reads the TSIG records this package writes.
///
/// No tool on the machine signs a message without sending it, so the MACs are checked against the
/// independent Python vectors (``TSIGVectors``); here Knot reads the signed messages from a dnstap
/// file, entirely offline, and must print the same key, algorithm, time, fudge, MAC and original ID.
final class DNSTSIGKnotInteropTests: XCTestCase {
    private static let kdig = "/usr/bin/kdig"

    func testKdigReadsOurSignedQueryAndTheVectorResponses() throws {
        guard FileManager.default.isExecutableFile(atPath: Self.kdig) else {
            return XCTFail("kdig not found: install the Debian package knot-dnsutils")
        }
        let key = try TSIGVectors.key()
        let query = try DNSTSIG.sign(DNSMessage.axfrQuery(zone: try DNSName("example.com"), id: 0x1234), key: key, now: TSIGVectors.time)
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("httpdns-tsig-\(UUID().uuidString).tap")
        defer { try? FileManager.default.removeItem(at: file) }
        try Data(DNSTap.file([(query.bytes, true), (TSIGVectors.m1, false), (TSIGVectors.m3, false)])).write(to: file)

        let output = try run(["-G", file.path, "+qr", "+nomultiline"])
        let macs = try [query.bytes, TSIGVectors.m1, TSIGVectors.m3].map { try XCTUnwrap(try DNSReceivedMessage(decoding: $0).tsigRecord()).mac }
        XCTAssertEqual(macs.first, query.mac)
        for (mac, time) in zip(macs, [TSIGVectors.time, TSIGVectors.time + 1, TSIGVectors.time + 2]) {
            let line = "TSIG\thmac-sha256. \(time) 300 32 \(Data(mac).base64EncodedString()) 4660 NOERROR 0"
            XCTAssertTrue(output.contains(line), "kdig did not print \(line) in:\n\(output)")
        }
        XCTAssertTrue(output.contains("xfr-key.example."), output)
    }

    /// kdig's output (spawned by `RunningTool`, not Foundation's `Process`: see `Spawn`).
    private func run(_ arguments: [String]) throws -> String {
        let kdig = try RunningTool(executable: URL(fileURLWithPath: Self.kdig), arguments: arguments)
        _ = try kdig.wait(timeout: .seconds(30))
        return String(decoding: kdig.stdout + kdig.stderr, as: UTF8.self)
    }
}

/// A dnstap file (Frame Streams with `protobuf:dnstap.Dnstap` content, the dnstap.proto fields
/// written by hand) holding DNS messages, for `kdig -G`.
private enum DNSTap {
    static func file(_ messages: [(bytes: [UInt8], isQuery: Bool)]) -> [UInt8] {
        let content = Array("protobuf:dnstap.Dnstap".utf8)
        let start = be32(2) + be32(1) + be32(UInt32(content.count)) + content  // START, CONTENT_TYPE
        var out = be32(0) + be32(UInt32(start.count)) + start
        for message in messages {
            let frame = dnstap(message.bytes, isQuery: message.isQuery)
            out += be32(UInt32(frame.count)) + frame
        }
        return out + be32(0) + be32(4) + be32(3)  // STOP
    }

    /// `Dnstap { type: MESSAGE, message: Message { TOOL_QUERY or TOOL_RESPONSE over TCP/IPv4 } }`.
    private static func dnstap(_ wire: [UInt8], isQuery: Bool) -> [UInt8] {
        var message = varintField(1, isQuery ? 11 : 12) + varintField(2, 1) + varintField(3, 2)
        message += bytesField(4, [127, 0, 0, 1]) + bytesField(5, [127, 0, 0, 1]) + varintField(6, 5353) + varintField(7, 53)
        message += varintField(8, 1_700_000_000)
        message += isQuery ? bytesField(10, wire) : varintField(12, 1_700_000_001) + bytesField(14, wire)
        return bytesField(14, message) + varintField(15, 1)
    }

    private static func be32(_ value: UInt32) -> [UInt8] {
        [UInt8(value >> 24), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)]
    }

    private static func varint(_ value: UInt64) -> [UInt8] {
        var value = value
        var out: [UInt8] = []
        repeat {
            let byte = UInt8(value & 0x7F)
            value >>= 7
            out.append(value == 0 ? byte : byte | 0x80)
        } while value != 0
        return out
    }

    private static func varintField(_ number: UInt64, _ value: UInt64) -> [UInt8] { varint(number << 3) + varint(value) }

    private static func bytesField(_ number: UInt64, _ data: [UInt8]) -> [UInt8] {
        varint(number << 3 | 2) + varint(UInt64(data.count)) + data
    }
}
