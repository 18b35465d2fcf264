import DNSWire
import DNSZoneTransfer
import HTTPDNSCore
import XCTest

/// Reading IXFR responses (RFC 1995 §4) with ``DNSZoneTransfer``: the three forms and the rules
/// that make the caller keep its zone.
final class DNSZoneTransferIXFRTests: XCTestCase {
    private typealias Z = ZoneFixture

    /// Serial 1 → 2: delete www .1, add www .3; 2 → 3: delete mail, add ftp (RFC 1995 §7's shape).
    private func incremental() -> [DNSRecord] {
        [
            Z.soaRecord(3),
            Z.soaRecord(1), Z.a("WWW.example.com", 1, ttl: 999), Z.soaRecord(2), Z.a("www.example.com", 3),
            Z.soaRecord(2), Z.a("mail.example.com", 2), Z.soaRecord(3), Z.a("ftp.example.com", 4),
            Z.soaRecord(3),
        ]
    }

    private func expectedIncremental() -> DNSZoneTransfer.Result {
        .incremental(DNSZoneSnapshot(zone: Z.zone, soa: Z.soa(3), soaTTL: 3600, records: [
            DNSRecord(name: Z.zone, ttl: 3600, data: .ns(Z.name("ns1.example.com"))),
            Z.a("www.example.com", 3), Z.a("ftp.example.com", 4),
        ]))
    }

    private func run(_ records: [DNSRecord], perMessage: Int = 100, current: DNSZoneSnapshot = Z.snapshot()) -> [DNSZoneTransfer.Action] {
        var transfer = DNSZoneTransfer(ixfr: current, id: 5)
        return Z.run(&transfer, Z.responses(to: transfer.query, records, perMessage: perMessage))
    }

    private func failure(_ records: [DNSRecord]) -> DNSZoneTransferError.Code? {
        run(records).compactMap(\.failureCode).first
    }

    func testQueryCarriesTheCurrentSOA() {
        let transfer = DNSZoneTransfer(ixfr: Z.snapshot(), id: 5)
        XCTAssertEqual(transfer.query.questions, [DNSQuestion(name: Z.zone, type: .IXFR)])
        XCTAssertEqual(transfer.query.authorities, [Z.soaRecord(1)])
        XCTAssertEqual(transfer.query.id, 5)
    }

    func testSingleSOAMeansUpToDate() {
        XCTAssertEqual(run([Z.soaRecord(1)]), [.done(.upToDate(Z.soa(1)))])
    }

    func testOlderOrUndefinedSerialIsRefused() {
        XCTAssertEqual(failure([Z.soaRecord(0)]), .serialWentBackwards)
        // Exactly 2^31 ahead is undefined (RFC 1982 §3.2): not newer, so refused.
        XCTAssertEqual(failure([Z.soaRecord(1 &+ (1 << 31))]), .serialWentBackwards)
        // Wrapping past 2^32 is newer: serial 4,294,967,295 → 5.
        let current = Z.snapshot(serial: .max)
        XCTAssertEqual(run([Z.soaRecord(5), Z.soaRecord(5)], current: current).last?.result,
                       .full(DNSZoneSnapshot(zone: Z.zone, soa: Z.soa(5), soaTTL: 3600, records: [])))
    }

    func testAXFRFormReplacesTheZone() {
        let records = [Z.soaRecord(9), Z.a("new.example.com", 7), Z.soaRecord(9)]
        XCTAssertEqual(run(records).last, .done(.full(DNSZoneSnapshot(zone: Z.zone, soa: Z.soa(9), soaTTL: 3600, records: [Z.a("new.example.com", 7)]))))
    }

    func testIncrementalFormInEveryMessageLayout() {
        for perMessage in 1...incremental().count {
            let actions = run(incremental(), perMessage: perMessage)
            XCTAssertTrue(actions.dropLast().allSatisfy { $0 == .needMore }, "\(perMessage)")
            XCTAssertEqual(actions.last, .done(expectedIncremental()), "\(perMessage) per message")
        }
    }

    func testEveryIncrementalStreamOneMessageShortIsIncomplete() {
        for perMessage in [1, 3] {
            var probe = DNSZoneTransfer(ixfr: Z.snapshot(), id: 5)
            let messages = Z.responses(to: probe.query, incremental(), perMessage: perMessage)
            _ = probe.streamEnded()
            for cut in 0..<messages.count {
                var transfer = DNSZoneTransfer(ixfr: Z.snapshot(), id: 5)
                XCTAssertTrue(Z.run(&transfer, Array(messages.prefix(cut))).allSatisfy { $0 == .needMore }, "cut \(cut)")
                XCTAssertEqual(transfer.streamEnded().failureCode, .incomplete, "cut \(cut)")
            }
        }
    }

    func testDeletingARecordThatIsNotThereFails() {
        var records = incremental()
        records[2] = Z.a("www.example.com", 200)
        XCTAssertEqual(failure(records), .absentDeletion)
        // Deleting the same record twice: the second time it is gone.
        XCTAssertEqual(failure([Z.soaRecord(2), Z.soaRecord(1), Z.a("www.example.com", 1), Z.a("www.example.com", 1), Z.soaRecord(2), Z.soaRecord(2)]), .absentDeletion)
    }

    func testSequencesMustChainFromOurSerialToTheNewOne() {
        // The first sequence starts elsewhere than our serial.
        var records = incremental()
        records[1] = Z.soaRecord(0)
        XCTAssertEqual(failure(records), .serialChainBroken)
        // The second sequence does not start where the first ended.
        records = incremental()
        records[5] = Z.soaRecord(7)
        XCTAssertEqual(failure(records), .serialChainBroken)
        // A sequence ends past the new serial.
        XCTAssertEqual(failure([Z.soaRecord(3), Z.soaRecord(1), Z.soaRecord(4), Z.soaRecord(4), Z.soaRecord(3), Z.soaRecord(3)]), .serialChainBroken)
        // The closing SOA differs from the opening one.
        records = incremental()
        var closing = Z.soa(3)
        closing.refresh = 1
        records[records.count - 1] = DNSRecord(name: Z.zone, ttl: 3600, data: .soa(closing))
        XCTAssertEqual(failure(records), .serialChainBroken)
    }

    func testASequenceGoingBackwardsFails() {
        XCTAssertEqual(failure([Z.soaRecord(3), Z.soaRecord(1), Z.soaRecord(1), Z.soaRecord(3), Z.soaRecord(3)]), .serialWentBackwards)
        XCTAssertEqual(failure([Z.soaRecord(3), Z.soaRecord(1), Z.soaRecord(0), Z.soaRecord(3)]), .serialWentBackwards)
        XCTAssertEqual(failure([Z.soaRecord(3), Z.soaRecord(1), Z.soaRecord(1 &+ (1 << 31)), Z.soaRecord(3)]), .serialWentBackwards)
    }

    func testRecordsAfterTheClosingSOAFail() {
        XCTAssertEqual(failure(incremental() + [Z.a("late.example.com", 1)]), .trailingRecords)
        XCTAssertEqual(failure([Z.soaRecord(1), Z.a("www.example.com", 1)]), .trailingRecords)
    }

    func testOutOfZoneAdditionFails() {
        var records = incremental()
        records[4] = Z.a("www.example.net", 3)
        XCTAssertEqual(failure(records), .outOfZone)
    }

    func testCallerKeepsTheOldZoneOnFailure() {
        // The machine never touches the snapshot it was given; a failure leaves it as it was.
        let current = Z.snapshot()
        var records = incremental()
        records[records.count - 2] = Z.a("www.example.net", 4)
        var transfer = DNSZoneTransfer(ixfr: current, id: 5)
        XCTAssertEqual(Z.run(&transfer, Z.responses(to: transfer.query, records, perMessage: 2)).compactMap(\.failureCode).first, .outOfZone)
        XCTAssertEqual(current, Z.snapshot())
    }
}
