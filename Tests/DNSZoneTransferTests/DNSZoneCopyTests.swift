import DNSWire
import Foundation
@testable import DNSZoneTransfer
import HTTPDNSCore
import XCTest

/// A secondary's copy on disk (issue 24): what it writes reads back as the same zone, and any
/// damage or forgery loads nothing.
final class DNSZoneCopyTests: XCTestCase {
    private typealias Z = ZoneFixture

    /// 300 A records (several messages) and TXT records of 9 KiB each (64 of them would pass 64 KiB
    /// in one message: the encoder splits).
    private func largeSnapshot() -> DNSZoneSnapshot {
        var records = (0..<300).map { Z.a("host\($0).example.com", UInt8($0 % 250)) }
        for index in 0..<70 {
            let text = [UInt8](repeating: UInt8(ascii: "a") + UInt8(index % 26), count: 255)
            records.append(DNSRecord(name: Z.name("txt\(index).example.com"), ttl: 60, data: .txt(Array(repeating: text, count: 36))))
        }
        return DNSZoneSnapshot(zone: Z.zone, soa: Z.soa(77), soaTTL: 3600, records: records)
    }

    func testAZoneReadsBackAsItWasWritten() throws {
        for snapshot in [Z.snapshot(serial: 9), largeSnapshot(), DNSZoneSnapshot(zone: Z.zone, soa: Z.soa(3), soaTTL: 60, records: [])] {
            let bytes = try DNSZoneCopy.encode(snapshot)
            XCTAssertTrue(bytes.starts(with: Array("swift-httpdns-zone 1 sha256 ".utf8)))
            XCTAssertEqual(try DNSZoneCopy.decode(bytes, zone: Z.zone), snapshot)
        }
    }

    func testDamageAnywhereLoadsNothing() throws {
        let bytes = try DNSZoneCopy.encode(Z.snapshot(serial: 9))
        let headerLength = bytes.firstIndex(of: UInt8(ascii: "\n"))! + 1
        // One flipped bit at every position of the body: the digest catches each.
        for position in headerLength..<bytes.count {
            var damaged = bytes
            damaged[position] ^= 0x04
            XCTAssertThrowsError(try DNSZoneCopy.decode(damaged, zone: Z.zone), "byte \(position)") { error in
                XCTAssertEqual((error as? DNSZoneCopy.Rejection)?.reason, "the digest does not match: the file is damaged")
            }
        }
        // Cut short anywhere.
        for length in [0, 10, headerLength - 1, headerLength, bytes.count - 1] {
            XCTAssertThrowsError(try DNSZoneCopy.decode(Array(bytes.prefix(length)), zone: Z.zone), "cut at \(length)")
        }
        // Another format, version or digest shape.
        for header in ["swift-httpdns-cache 1 sha256 ", "swift-httpdns-zone 2 sha256 ", "swift-httpdns-zone 1 md5 "] {
            let forged = Array(header.utf8) + bytes[(bytes.firstIndex(of: UInt8(ascii: " "))! + 1 + 2 + 7)...]
            XCTAssertThrowsError(try DNSZoneCopy.decode(forged, zone: Z.zone), header)
        }
    }

    /// A file whose digest matches (rewritten by someone who knows the format) is still checked as
    /// a transfer is: the zone's name, records inside it, the closing SOA, nothing after it.
    func testAForgedFileWithAValidDigestIsCheckedAsATransfer() throws {
        func sealed(_ body: [UInt8]) -> [UInt8] {
            Array("swift-httpdns-zone 1 sha256 \(HTTPDNSCrypto.hexEncode(HTTPDNSCrypto.sha256(body)))\n".utf8) + body
        }
        func framed(_ records: [DNSRecord]) throws -> [UInt8] {
            var message = DNSMessage.response(to: DNSMessage.axfrQuery(zone: Z.zone, id: 0), recursionAvailable: false)
            message.answers = records
            let wire = try message.encode()
            return [UInt8(wire.count >> 8), UInt8(wire.count & 0xff)] + wire
        }
        let good = try framed([Z.soaRecord(5), Z.a("www.example.com", 1), Z.soaRecord(5)])
        XCTAssertEqual(try DNSZoneCopy.decode(sealed(good), zone: Z.zone).soa.serial, 5)
        let cases: [(String, [UInt8], DNSName)] = [
            ("another zone's copy", good, Z.name("example.net")),
            ("a record outside the zone", try framed([Z.soaRecord(5), Z.a("www.example.net", 1), Z.soaRecord(5)]), Z.zone),
            ("no closing SOA", try framed([Z.soaRecord(5), Z.a("www.example.com", 1)]), Z.zone),
            ("bytes after the closing SOA", good + [0, 0], Z.zone),
            ("a message after the closing SOA", good + (try framed([Z.a("www.example.com", 2)])), Z.zone),
            ("a length past the end", good + [0xff, 0xff, 1], Z.zone),
            ("a message that does not decode", [0, 3, 1, 2, 3], Z.zone),
        ]
        for (what, body, zone) in cases {
            XCTAssertThrowsError(try DNSZoneCopy.decode(sealed(body), zone: zone), what)
        }
        // The transfer's limits hold for a file as for the network.
        XCTAssertThrowsError(try DNSZoneCopy.decode(sealed(good), zone: Z.zone, limits: .init(maxRecords: 2))) { error in
            XCTAssertTrue("\(error)".contains("tooLarge"), "\(error)")
        }
    }

    func testARecordOver64KiBDoesNotEncode() {
        let huge = DNSRecord(name: Z.name("big.example.com"), ttl: 60, data: .txt(Array(repeating: [UInt8](repeating: 0x61, count: 255), count: 260)))
        XCTAssertThrowsError(try DNSZoneCopy.encode(DNSZoneSnapshot(zone: Z.zone, soa: Z.soa(1), soaTTL: 60, records: [huge])))
    }

    /// The fuzz target's seeds (Fuzz/seeds.py) are good copies, so that fuzzing starts inside the format.
    func testTheFuzzSeedsAreGoodCopies() throws {
        let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fuzz/Corpus/zone-copy")
        let names = try FileManager.default.contentsOfDirectory(atPath: folder.path)
        XCTAssertFalse(names.isEmpty)
        for name in names {
            let bytes = Array(try Data(contentsOf: folder.appendingPathComponent(name)))
            XCTAssertNoThrow(try DNSZoneCopy.decode(bytes, zone: Z.zone), name)
        }
    }
}
