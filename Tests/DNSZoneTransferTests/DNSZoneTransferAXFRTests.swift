import DNSWire
import DNSZoneTransfer
import HTTPDNSCore
import XCTest

/// Reading AXFR responses (RFC 5936) with ``DNSZoneTransfer``.
final class DNSZoneTransferAXFRTests: XCTestCase {
    private typealias Z = ZoneFixture
    private let body = [
        Z.a("www.example.com", 1), Z.a("mail.example.com", 2), Z.a("Deep.Sub.Example.com", 3),
        DNSRecord(name: Z.zone, ttl: 3600, data: .ns(Z.name("ns1.example.com"))), Z.a("ns1.example.com", 53),
    ]

    private func records() -> [DNSRecord] { [Z.soaRecord(7)] + body + [Z.soaRecord(7)] }

    private func expected() -> DNSZoneTransfer.Result {
        .full(DNSZoneSnapshot(zone: Z.zone, soa: Z.soa(7), soaTTL: 3600, records: body))
    }

    func testQueryIsAnAXFRForTheZone() {
        let transfer = DNSZoneTransfer(axfr: Z.zone, id: 0x4242)
        XCTAssertEqual(transfer.query, DNSMessage.axfrQuery(zone: Z.zone, id: 0x4242))
    }

    func testWholeZoneInEveryMessageLayout() {
        for perMessage in 1...records().count {
            var transfer = DNSZoneTransfer(axfr: Z.zone, id: 1)
            let messages = Z.responses(to: transfer.query, records(), perMessage: perMessage)
            let actions = Z.run(&transfer, messages)
            XCTAssertEqual(actions.dropLast(), Array(repeating: .needMore, count: messages.count - 1), "\(perMessage)")
            XCTAssertEqual(actions.last, .done(expected()), "\(perMessage) per message")
        }
    }

    func testEveryStreamOneMessageShortIsIncomplete() {
        for perMessage in 1...3 {
            var probe = DNSZoneTransfer(axfr: Z.zone, id: 1)
            let messages = Z.responses(to: probe.query, records(), perMessage: perMessage)
            for cut in 0..<messages.count {
                var transfer = DNSZoneTransfer(axfr: Z.zone, id: 1)
                let actions = Z.run(&transfer, Array(messages.prefix(cut)))
                XCTAssertTrue(actions.allSatisfy { $0 == .needMore }, "cut \(cut)")
                XCTAssertEqual(transfer.streamEnded().failureCode, .incomplete, "cut \(cut) of \(messages.count)")
            }
            XCTAssertEqual(probe.streamEnded().failureCode, .incomplete)
        }
    }

    func testEmptyZoneIsTwoSOAs() {
        var transfer = DNSZoneTransfer(axfr: Z.zone, id: 1)
        let actions = Z.run(&transfer, Z.responses(to: transfer.query, [Z.soaRecord(7), Z.soaRecord(7)], perMessage: 2))
        XCTAssertEqual(actions, [.done(.full(DNSZoneSnapshot(zone: Z.zone, soa: Z.soa(7), soaTTL: 3600, records: [])))])
    }

    func testMessagesOutOfOrderFail() {
        var probe = DNSZoneTransfer(axfr: Z.zone, id: 1)
        let messages = Z.responses(to: probe.query, records(), perMessage: 2)
        _ = probe.streamEnded()
        // Any order that does not start with the first message fails on its first message.
        for first in 1..<messages.count {
            var order = messages
            order.swapAt(0, first)
            var transfer = DNSZoneTransfer(axfr: Z.zone, id: 1)
            let actions = Z.run(&transfer, order)
            XCTAssertNotNil(actions.first?.failureCode, "message \(first) first")
            XCTAssertTrue(actions.dropFirst().allSatisfy { $0.failureCode == .alreadyFinished })
        }
    }

    func testSignedStreamCatchesReorderingOfLaterMessages() throws {
        // Without TSIG a reordered tail is undetectable (TCP keeps order); with it, the MAC chain fails.
        let key = try TSIGVectors.key()
        let transfer = DNSZoneTransfer(axfr: Z.zone, id: 9)
        var signer = try StreamSigner(key: key, now: TSIGVectors.time, query: transfer.query)
        let messages = try Z.responses(to: transfer.query, records(), perMessage: 2).map { try signer.sign($0) }
        for (order, expectDone) in [([0, 1, 2, 3], true), ([0, 2, 1, 3], false), ([0, 1, 3], false)] {
            var machine = transfer
            var verifier = DNSTSIGStreamVerifier(key: key, requestMAC: signer.requestMAC)
            var last = DNSZoneTransfer.Action.needMore
            for index in order where last == .needMore {
                let signature: DNSZoneTransfer.Signature
                do {
                    signature = try verifier.verify(messages[index], now: TSIGVectors.time) ? .signed : .unsigned
                } catch {
                    signature = .rejected(error)
                }
                last = machine.receive(messages[index].message, wireSize: messages[index].bytes.count, signature: signature)
            }
            if expectDone {
                XCTAssertEqual(last, .done(expected()))
            } else {
                XCTAssertEqual(last.failureCode, .tsig, "\(order)")
            }
        }
    }

    func testLastMessageUnsignedInASignedStreamFails() {
        var transfer = DNSZoneTransfer(axfr: Z.zone, id: 1)
        let messages = Z.responses(to: transfer.query, records(), perMessage: 4)
        XCTAssertEqual(transfer.receive(messages[0], wireSize: 10, signature: .signed), .needMore)
        let last = transfer.receive(messages[1], wireSize: 10, signature: .unsigned)
        XCTAssertEqual(last.failureCode, .tsig)
        if case .failed(let error) = last { XCTAssertEqual(error.tsigError?.code, .missingSignature) }
    }

    func testRejectedSignatureFails() {
        var transfer = DNSZoneTransfer(axfr: Z.zone, id: 1)
        let messages = Z.responses(to: transfer.query, records(), perMessage: 4)
        let action = transfer.receive(messages[0], wireSize: 10, signature: .rejected(DNSTSIGError(.badSignature)))
        XCTAssertEqual(action.failureCode, .tsig)
    }

    /// A primary that refuses our signature says so in its TSIG (RFC 8945 §5.2; BIND and Knot with a
    /// wrong secret): a key problem, not a server one. A NOTAUTH without a TSIG error (refused for
    /// another reason) stays `.serverError`.
    func testANotAuthCarryingThePrimarysTSIGErrorIsATSIGFailure() {
        let query = DNSZoneTransfer(axfr: Z.zone, id: 1).query
        let refusal = DNSMessage.response(to: query, rcode: .notAuthoritative, recursionAvailable: false)
        let badSignature = DNSTSIGError(.peerError, "TSIG error 16 BADSIG from the peer")
        var transfer = DNSZoneTransfer(axfr: Z.zone, id: 1)
        guard case .failed(let error) = transfer.receive(refusal, wireSize: 40, signature: .rejected(badSignature)) else {
            return XCTFail("a refusal fails the transfer")
        }
        XCTAssertEqual(error.code, .tsig)
        XCTAssertEqual(error.tsigError, badSignature)
        XCTAssertTrue("\(error)".contains("the primary refused our signature: tsig peerError: TSIG error 16 BADSIG"), "\(error)")
        for other in [DNSZoneTransfer.Signature.rejected(DNSTSIGError(.missingSignature)), .none] {
            var unsigned = DNSZoneTransfer(axfr: Z.zone, id: 1)
            XCTAssertEqual(unsigned.receive(refusal, wireSize: 40, signature: other).failureCode, .serverError, "\(other)")
        }
    }

    /// Runs the two-message transfer with `change` applied to message `index`; returns the failure.
    private func failure(at index: Int, _ change: (inout DNSMessage) -> Void) -> DNSZoneTransferError? {
        var transfer = DNSZoneTransfer(axfr: Z.zone, id: 1)
        var messages = Z.responses(to: transfer.query, records(), perMessage: 4)
        change(&messages[index])
        for action in Z.run(&transfer, messages) {
            if case .failed(let error) = action { return error }
        }
        return nil
    }

    func testHeaderRulesInTheFirstAndALaterMessage() {
        for index in [0, 1] {
            XCTAssertEqual(failure(at: index) { $0.id ^= 1 }?.code, .idMismatch)
            XCTAssertEqual(failure(at: index) { $0.id ^= 1 }?.message, index + 1)
            XCTAssertEqual(failure(at: index) { $0.isResponse = false }?.code, .notResponse)
            XCTAssertEqual(failure(at: index) { $0.opcode = 4 }?.code, .badOpcode)
            XCTAssertEqual(failure(at: index) { $0.isTruncated = true }?.code, .truncatedResponse)
            let refused = failure(at: index) { $0.rcode = .notAuthoritative }
            XCTAssertEqual(refused?.code, .serverError)
            XCTAssertEqual(refused?.responseCode, .notAuthoritative)
            XCTAssertEqual(failure(at: index) { $0.questions = [DNSQuestion(name: Z.name("example.org"), type: .AXFR)] }?.code, .questionMismatch)
        }
        XCTAssertEqual(failure(at: 0) { $0.questions = [] }?.code, .questionMismatch)
        XCTAssertNil(failure(at: 1) { $0.questions = [DNSQuestion(name: Z.zone, type: .AXFR)] })
    }

    func testRecordRules() {
        XCTAssertEqual(failure(at: 1) { $0.answers[0].recordClass = .CH }?.code, .wrongClass)
        XCTAssertEqual(failure(at: 1) { $0.answers[0].name = Z.name("www.example.net") }?.code, .outOfZone)
        XCTAssertEqual(failure(at: 1) { $0.answers[0].name = Z.name("notexample.com") }?.code, .outOfZone)
        XCTAssertEqual(failure(at: 0) { $0.answers.removeFirst() }?.code, .missingSOA)
        XCTAssertEqual(failure(at: 0) { $0.answers[0].name = Z.name("sub.example.com") }?.code, .missingSOA)
        XCTAssertEqual(failure(at: 1) { $0.answers[$0.answers.count - 1] = Z.soaRecord(8) }?.code, .unexpectedSOA)
        XCTAssertEqual(failure(at: 1) { $0.answers.append(Z.a("late.example.com", 9)) }?.code, .trailingRecords)
        XCTAssertEqual(failure(at: 0) { $0.answers = [] }?.message, 1)
    }

    func testOversizeTransfersFail() {
        let count = records().count
        for (limits, ok) in [
            (DNSZoneTransfer.Limits(maxRecords: count), true), (DNSZoneTransfer.Limits(maxRecords: count - 1), false),
        ] {
            var transfer = DNSZoneTransfer(axfr: Z.zone, id: 1, limits: limits)
            let actions = Z.run(&transfer, Z.responses(to: transfer.query, records(), perMessage: 3))
            XCTAssertEqual(actions.last?.failureCode, ok ? nil : .tooLarge)
        }
        var transfer = DNSZoneTransfer(axfr: Z.zone, id: 1, limits: DNSZoneTransfer.Limits(maxBytes: 1000))
        let messages = Z.responses(to: transfer.query, records(), perMessage: 1)
        var actions: [DNSZoneTransfer.Action] = []
        for message in messages { actions.append(transfer.receive(message, wireSize: 400, signature: .none)) }
        XCTAssertEqual(actions.prefix(3), [.needMore, .needMore, .failed(DNSZoneTransferError(.tooLarge, message: 3, "3 records, 1200 bytes; limits 1000000, 1000"))])
    }

    func testNothingIsAcceptedAfterTheEnd() {
        var transfer = DNSZoneTransfer(axfr: Z.zone, id: 1)
        let messages = Z.responses(to: transfer.query, records(), perMessage: 10)
        XCTAssertEqual(Z.run(&transfer, messages), [.done(expected())])
        XCTAssertEqual(transfer.receive(messages[0], wireSize: 1, signature: .none).failureCode, .alreadyFinished)
        XCTAssertEqual(transfer.streamEnded().failureCode, .alreadyFinished)
    }
}
