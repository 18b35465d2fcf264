import DNSWire
import DNSZoneTransfer
import HTTPDNSCore
@testable import HTTPDNSServer
import XCTest

/// A zone transferred from a primary becomes the zone the service answers (issue 24): A, AAAA and
/// CNAME by owner, the rest counted, the JSON overlay's checks and views applied, the result checked
/// whole.
final class HTTPDNSZoneTransferConversionTests: XCTestCase {
    private func name(_ text: String) throws -> DNSName { try DNSName(text) }

    private func snapshot(_ records: [DNSRecord]) throws -> DNSZoneSnapshot {
        let soa = DNSSOA(primaryServer: try name("ns1.example.test"), responsible: try name("hostmaster.example.test"),
                         serial: 7, refresh: 60, retry: 10, expire: 3600, minimum: 30)
        return DNSZoneSnapshot(zone: try name("example.test"), soa: soa, soaTTL: 3600, records: records)
    }

    private func record(_ owner: String, ttl: UInt32 = 300, _ data: DNSRecordData) throws -> DNSRecord {
        DNSRecord(name: try name(owner), ttl: ttl, data: data)
    }

    func testAddressesAndAliasesByOwnerTheSmallestTTLAndTheRestCounted() throws {
        let transferred = try HTTPDNSZone.transferred(try snapshot([
            try record("WWW.example.test", ttl: 300, .a([192, 0, 2, 1])),
            try record("www.example.test", ttl: 120, .a([192, 0, 2, 2])),
            try record("www.example.test", ttl: 600, .aaaa([0x20, 0x01, 0x0d, 0xb8] + [UInt8](repeating: 0, count: 11) + [1])),
            try record("alias.example.test", ttl: 60, .cname(try name("www.example.test"))),
            try record("*.apps.example.test", .a([192, 0, 2, 9])),
            try record("example.test", ttl: 3600, .ns(try name("ns1.example.test"))),
            try record("example.test", .mx(preference: 10, exchange: try name("mail.example.test"))),
            try record("example.test", .txt([Array("v=spf1 -all".utf8)])),
        ]))
        let zone = transferred.zone
        XCTAssertEqual(Set(zone.entries.keys), ["www.example.test", "alias.example.test", "*.apps.example.test"])
        let www = try XCTUnwrap(zone.entries["www.example.test"])
        XCTAssertEqual(www.ipv4.map(\.description), ["192.0.2.1", "192.0.2.2"])
        XCTAssertEqual(www.ipv6.map(\.description), ["2001:db8::1"])
        XCTAssertEqual(www.ttl, 120, "the smallest TTL of the name's records")
        XCTAssertEqual(zone.entries["alias.example.test"]?.cname, "www.example.test")
        XCTAssertEqual(zone.match("x.apps.example.test")?.entry.ipv4.map(\.description), ["192.0.2.9"])
        XCTAssertEqual(transferred.ignored, [.NS: 1, .MX: 1, .TXT: 1])
        XCTAssertEqual(transferred.unmatchedOverlay, [])
    }

    func testTheOverlayGivesChecksAndViewsToTransferredNamesOnly() throws {
        let overlay = try HTTPDNSZone(json: Data("""
            {"www.example.test": {"A": ["198.51.100.1"], "check": {"type": "tcp", "port": 443},
                                  "views": {"carrier-a": {"A": ["198.51.100.7"]}}},
             "gone.example.test": {"A": ["198.51.100.2"]}}
            """.utf8))
        let transferred = try HTTPDNSZone.transferred(try snapshot([try record("www.example.test", .a([192, 0, 2, 1]))]), overlay: overlay)
        let www = try XCTUnwrap(transferred.zone.entries["www.example.test"])
        XCTAssertEqual(www.ipv4.map(\.description), ["192.0.2.1"], "the primary's records, not the overlay's")
        XCTAssertEqual(www.check?.kind, .tcp)
        XCTAssertEqual(www.views["carrier-a"]?.ipv4.map(\.description), ["198.51.100.7"])
        XCTAssertNil(transferred.zone.entries["gone.example.test"])
        XCTAssertEqual(transferred.unmatchedOverlay, ["gone.example.test"])
    }

    func testAZoneThatBreaksTheRulesIsRefusedNamingTheZone() throws {
        let cases: [([DNSRecord], String)] = [
            ([try record("www.example.test", .a([192, 0, 2, 1])), try record("www.example.test", .cname(try name("other.example.test")))],
             "CNAME cannot have addresses too"),
            ([try record("a.example.test", .cname(try name("b.example.test"))), try record("b.example.test", .cname(try name("a.example.test")))],
             "CNAME"),
            ([try record("a.example.test", .cname(try name("b.example.test"))), try record("a.example.test", .cname(try name("c.example.test")))],
             "more than one CNAME"),
            ([try record("bad.example.test", .a([192, 0, 2]))], "a bad A record"),
        ]
        for (records, expected) in cases {
            XCTAssertThrowsError(try HTTPDNSZone.transferred(try snapshot(records))) { error in
                let detail = (error as? HTTPDNSServiceError)?.detail ?? "\(error)"
                XCTAssertTrue(detail.hasPrefix("zone example.test: "), detail)
                XCTAssertTrue(detail.contains(expected), "\(detail) should say \(expected)")
            }
        }
    }
}
