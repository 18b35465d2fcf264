import DNSSockets
import DNSWire
import DNSZoneTransfer
import HTTPDNSCore
import HTTPDNSFleet
@testable import HTTPDNSServer
import HTTPDNSTestSupport
import XCTest

/// The zones a server follows, put into its service (issue 24), where the configuration's limits
/// can be set (`httpdns serve` keeps the defaults: 1,000,000 records, 256 MiB).
final class HTTPDNSSecondaryZonesTests: XCTestCase {
    /// A transfer over the limits is refused as it arrives (the third message of 50 records passes
    /// 100), logged and counted; the zone in service stays.
    func testATransferOverTheLimitsIsRefusedCountedAndTheOldZoneKept() async throws {
        let zone = try DNSName("example.test")
        let primary = try FakeTransferPrimary { query, index in
            // Serial 1: www and 10 hosts; serial 2, asked for next: www and 300 hosts.
            let serial: UInt32 = index == 1 ? 1 : 2
            let hosts = (0..<(index == 1 ? 10 : 300)).map { FakeTransferPrimary.a("host\($0)", in: zone, "192.0.2.\($0 % 250)") }
            let www = FakeTransferPrimary.a("www", in: zone, "198.51.100.\(serial)")
            let answers = FakeTransferPrimary.zone(zone, serial: serial, records: [www] + hosts)
            return FakeTransferPrimary.stream(answering: query, answers: answers, perMessage: 50)
        }
        defer { primary.stop() }
        var configuration = HTTPDNSSecondary.Configuration(zone: zone, primaries: [SocketAddress(address: primary.address, port: primary.port)])
        configuration.limits = DNSZoneTransfer.Limits(maxRecords: 100, maxBytes: 1 << 20)
        configuration.transferTimeout = .seconds(10)
        let service = HTTPDNSService(configuration: HTTPDNSService.Configuration())
        let lines = HTTPDNSLock<[String]>([])
        let zones = HTTPDNSSecondaryZones([configuration], overlay: HTTPDNSZone(), service: service, monitor: HTTPDNSZoneFollowerLines { line in
            lines.withLock { $0.append(line) }
        })
        zones.start()
        defer { zones.stop() }
        let logged = { (text: String) in lines.withLock { $0.contains { $0.contains(text) } } }
        let loaded = await pollUntil(within: .seconds(15)) { logged("zone example.test serial 1 loaded by AXFR") }
        XCTAssertTrue(loaded, "serial 1: \(lines.withLock { $0 })")
        XCTAssertEqual(service.zone.entries["www.example.test"]?.ipv4, [HTTPDNSIPAddress("198.51.100.1")!])

        zones.notify(zone)
        let refused = await pollUntil(within: .seconds(15)) { logged("tooLarge") }
        XCTAssertTrue(refused, "the refusal: \(lines.withLock { $0 })")
        XCTAssertTrue(logged("zone example.test: no transfer: 127.0.0.1:\(primary.port): tooLarge in message 3: 150 records"), "\(lines.withLock { $0 })")
        XCTAssertEqual(service.zone.entries["www.example.test"]?.ipv4, [HTTPDNSIPAddress("198.51.100.1")!], "the old zone stays")
        XCTAssertNil(service.zone.entries["host299.example.test"])
        let metrics = service.metrics.render()
        for sample in [
            "httpdns_zone_transfer_failures_total{zone=\"example.test\",reason=\"tooLarge\"} 1\n",
            "httpdns_zone_transfers_total{zone=\"example.test\",result=\"failed\"} 1\n",
            "httpdns_zone_transfers_total{zone=\"example.test\",result=\"axfr\"} 1\n",
            "httpdns_zone_serial{zone=\"example.test\"} 1\n",
        ] {
            XCTAssertTrue(metrics.contains(sample), "\(sample) in:\n\(metrics)")
        }
        XCTAssertEqual(primary.queries.map { $0.questions.first?.type }, [.AXFR, .IXFR], "one refused IXFR; the next try waits for RETRY")
    }
}
