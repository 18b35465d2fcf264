import DNSSockets
import DNSWire
import DNSZoneTransfer
import HTTPDNSCore
@testable import HTTPDNSFleet
import HTTPDNSTestSupport
import XCTest

/// The followers without the service (issue 31): a fake ``HTTPDNSZoneSink`` takes the zones and
/// counts, a monitor takes the events; HTTPDNSServerTests/HTTPDNSSecondaryZonesTests checks the same
/// follower through the real service.
final class HTTPDNSSecondaryZonesSinkTests: XCTestCase {
    final class Sink: HTTPDNSZoneSink {
        typealias Overlay = String
        struct State {
            var served: [(serials: [UInt32], overlay: String)] = []
            var transfers: [String] = []
            var serials: [UInt32?] = []
            var loads: [Int?] = []
            var readiness: (@Sendable () -> HTTPDNSFollowerReadiness)?
            var refuse = false
        }
        let state = HTTPDNSLock(State())

        func serveTransferred(_ transfers: [HTTPDNSTransferredZone], overlay: String) throws(HTTPDNSFleetError) -> Int {
            try state.withLock { (state) throws(HTTPDNSFleetError) in
                if state.refuse { throw HTTPDNSFleetError(.invalidZone, "refused by the sink") }
                state.served.append((transfers.map(\.snapshot.soa.serial), overlay))
            }
            return transfers.map(\.snapshot.records.count).reduce(0, +)
        }

        func setFollowerReadiness(_ readiness: @escaping @Sendable () -> HTTPDNSFollowerReadiness) {
            state.withLock { $0.readiness = readiness }
        }

        func countTransfer(_ zone: String, view: String?, _ result: HTTPDNSTransferResult, reasons: [String]) {
            state.withLock { $0.transfers.append("\(zone) \(result.label)") }
        }

        func countSerial(_ zone: String, view: String?, _ serial: UInt32?) {
            state.withLock { $0.serials.append(serial) }
        }

        func countZoneLoad(names: Int?) {
            state.withLock { $0.loads.append(names) }
        }
    }

    struct Events: HTTPDNSZoneFollowerMonitor {
        let lines = HTTPDNSLock<[String]>([])
        func zoneFollower(_ event: HTTPDNSZoneFollowerEvent) {
            lines.withLock { $0.append(event.text) }
        }
    }

    func testATransferGoesToTheSinkWithTheOverlayAndIsToldAndCounted() async throws {
        let zone = try DNSName("example.test")
        let primary = try FakeTransferPrimary { query, _ in
            let answers = FakeTransferPrimary.zone(zone, serial: 1, records: [FakeTransferPrimary.a("www", in: zone, "198.51.100.1")])
            return FakeTransferPrimary.stream(answering: query, answers: answers, perMessage: 50)
        }
        defer { primary.stop() }
        var configuration = HTTPDNSSecondary.Configuration(zone: zone, primaries: [SocketAddress(address: primary.address, port: primary.port)])
        configuration.transferTimeout = .seconds(10)
        let sink = Sink()
        let events = Events()
        let zones = HTTPDNSSecondaryZones([configuration], overlay: "the overlay", service: sink, monitor: events)
        let readiness = try XCTUnwrap(sink.state.withLock { $0.readiness })
        XCTAssertEqual(readiness().notReady, ["loading example.test"])
        zones.start()
        defer { zones.stop() }

        let loaded = await pollUntil(within: .seconds(15)) { events.lines.withLock { $0.contains("zone example.test serial 1 loaded by AXFR") } }
        XCTAssertTrue(loaded, "\(events.lines.withLock { $0 })")
        let state = sink.state.withLock { $0 }
        XCTAssertEqual(state.served.map(\.serials), [[1]])
        XCTAssertEqual(state.served.map(\.overlay), ["the overlay"])
        XCTAssertEqual(state.transfers, ["example.test axfr"])
        XCTAssertEqual(state.serials, [1])
        XCTAssertEqual(state.loads, [1], "the sink's count of names")
        XCTAssertEqual(readiness(), HTTPDNSFollowerReadiness())

        // A new overlay the sink refuses: the error comes back, the old overlay stays in use.
        sink.state.withLock { $0.refuse = true }
        XCTAssertThrowsError(try zones.reload(overlay: "a bad overlay")) { error in
            XCTAssertEqual((error as? HTTPDNSFleetError)?.code, .invalidZone)
        }
        sink.state.withLock { $0.refuse = false }
        XCTAssertEqual(sink.state.withLock { $0.served.map(\.overlay) }, ["the overlay"])
        // A good one is combined with the zone held.
        try zones.reload(overlay: "a new overlay")
        XCTAssertEqual(sink.state.withLock { $0.served.last?.serials }, [1])
        XCTAssertEqual(sink.state.withLock { $0.served.last?.overlay }, "a new overlay")
    }
}
