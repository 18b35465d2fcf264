import DNSSockets
import DNSWire
import DNSZoneTransfer
import HTTPDNSCore
import HTTPDNSTestSupport
import XCTest

/// ``DNSZoneTransferClient`` against Knot DNS, a real primary (issue 24): AXFR and IXFR signed with
/// TSIG, Knot's journal serving the increments, and the refusals a secondary must survive.
final class ZoneTransferKnotTests: XCTestCase {
    private func client(_ knot: KnotServer, key: DNSTSIGKey?) -> DNSZoneTransferClient {
        var client = DNSZoneTransferClient(primary: SocketAddress(address: knot.address, port: knot.port), key: key)
        client.timeout = .seconds(10)
        return client
    }

    private func key(_ knot: KnotServer, secret: String? = nil) throws -> DNSTSIGKey {
        try DNSTSIGKey(commandLine: "hmac-sha256:\(knot.keyName):\(secret ?? knot.keySecret)")
    }

    private func addresses(_ snapshot: DNSZoneSnapshot, _ owner: String) -> [String] {
        snapshot.records.filter { $0.name.text() == owner }.compactMap { record -> String? in
            if case .a(let bytes) = record.data { return bytes.map(String.init).joined(separator: ".") }
            return nil
        }.sorted()
    }

    func testAXFRThenIXFRFromKnotsJournalSignedWithTSIG() async throws {
        let knot = try KnotServer(records: ["www 300 A 192.0.2.1", "www 300 A 192.0.2.2", "api 60 A 192.0.2.3"])
        defer { knot.stop() }
        let zone = try DNSName("example.test")
        let transfers = client(knot, key: try key(knot))

        guard case .full(let first) = try await transfers.run(DNSZoneTransfer(axfr: zone, id: DNSSocketClient.randomID())) else {
            return XCTFail("an AXFR gives a full zone")
        }
        XCTAssertEqual(first.soa.serial, 1)
        XCTAssertEqual(addresses(first, "www.example.test"), ["192.0.2.1", "192.0.2.2"])
        XCTAssertEqual(addresses(first, "api.example.test"), ["192.0.2.3"])

        // Up to date: IXFR at the primary's serial is the SOA alone.
        guard case .upToDate(let soa) = try await transfers.run(DNSZoneTransfer(ixfr: first, id: DNSSocketClient.randomID())) else {
            return XCTFail("IXFR at the current serial is up to date")
        }
        XCTAssertEqual(soa.serial, 1)

        // Two commits on the primary: the IXFR carries both increments, applied in order.
        try knot.change(set: ["new 300 A 192.0.2.9"], unset: ["www 300 A 192.0.2.1"])
        try knot.change(set: ["api 60 A 192.0.2.4"], unset: ["api 60 A 192.0.2.3"])
        let result = try await transfers.run(DNSZoneTransfer(ixfr: first, id: DNSSocketClient.randomID()))
        guard case .incremental(let second) = result else { return XCTFail("an IXFR from the journal, got \(result)") }
        XCTAssertEqual(second.soa.serial, 3)
        XCTAssertEqual(addresses(second, "www.example.test"), ["192.0.2.2"])
        XCTAssertEqual(addresses(second, "new.example.test"), ["192.0.2.9"])
        XCTAssertEqual(addresses(second, "api.example.test"), ["192.0.2.4"])
        XCTAssertTrue(knot.log.contains("IXFR"), "Knot's log shows the IXFR:\n\(knot.log)")

        // The same zone by AXFR, for comparison: the increments gave exactly the primary's zone.
        guard case .full(let whole) = try await transfers.run(DNSZoneTransfer(axfr: zone, id: DNSSocketClient.randomID())) else {
            return XCTFail("an AXFR gives a full zone")
        }
        func records(_ snapshot: DNSZoneSnapshot) -> Set<String> { Set(snapshot.records.map { "\($0.name.text()) \($0.ttl) \($0.data)" }) }
        XCTAssertEqual(records(second), records(whole))
    }

    func testTransfersWithoutTheKeyOrWithAWrongOneAreRefusedAndGiveNoZone() async throws {
        let knot = try KnotServer(records: ["www 300 A 192.0.2.1"])
        defer { knot.stop() }
        let zone = try DNSName("example.test")
        let wrongSecret = Data((0..<32).map { UInt8($0) }).base64EncodedString()
        for (label, key) in [("no key", nil), ("wrong secret", try key(knot, secret: wrongSecret)),
                             ("unknown key", try DNSTSIGKey(commandLine: "hmac-sha256:other-key:\(knot.keySecret)"))] {
            do {
                let result = try await client(knot, key: key).run(DNSZoneTransfer(axfr: zone, id: DNSSocketClient.randomID()))
                XCTFail("\(label): the primary refuses, yet the transfer gave \(result)")
            } catch {
                guard case .transfer(let failure) = error else { return XCTFail("\(label): a refusal, not \(error)") }
                // Unsigned, we get a bare NOTAUTH; signed with a key Knot does not share, NOTAUTH
                // with its TSIG error (BADSIG, BADKEY): the key is at fault, and the code says so.
                XCTAssertEqual(failure.code, key == nil ? .serverError : .tsig, "\(label): \(failure)")
            }
        }
    }

    func testAPrimaryThatIsNotThereIsATransportFailureWithinTheDeadline() async throws {
        let port = try Dnsmasq.freePort(on: HTTPDNSIPAddress("127.0.0.1")!)
        var client = DNSZoneTransferClient(primary: SocketAddress(address: HTTPDNSIPAddress("127.0.0.1")!, port: port))
        client.timeout = .seconds(5)
        let transfer = DNSZoneTransfer(axfr: try DNSName("example.test"), id: 1)
        do {
            _ = try await client.run(transfer)
            XCTFail("nothing listens there")
        } catch {
            guard case .transport = error else { return XCTFail("a transport failure, not \(error)") }
        }
    }
}
