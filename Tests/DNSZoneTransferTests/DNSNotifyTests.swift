import DNSWire
import DNSZoneTransfer
import HTTPDNSCore
import XCTest

/// NOTIFY requests and their acknowledgements (RFC 1996).
final class DNSNotifyTests: XCTestCase {
    private typealias Z = ZoneFixture

    private func failure(_ change: (inout DNSMessage) -> Void) -> DNSNotify.Failure? {
        var message = DNSNotify.request(zone: Z.zone, id: 0x5151, soa: Z.soa(42))
        change(&message)
        do {
            _ = try DNSNotify(request: message)
            return nil
        } catch {
            return error
        }
    }

    func testRequestWithSerialHintThroughTheWire() throws {
        let bytes = try DNSNotify.request(zone: Z.zone, id: 0x5151, soa: Z.soa(42)).encode()
        let notify = try DNSNotify(request: try DNSMessage(decoding: bytes))
        XCTAssertEqual(notify.zone, Z.zone)
        XCTAssertEqual(notify.serial, DNSSerial(42))
        XCTAssertEqual(notify.id, 0x5151)
    }

    func testRequestWithoutSerialHint() throws {
        let notify = try DNSNotify(request: DNSNotify.request(zone: Z.zone, id: 1))
        XCTAssertNil(notify.serial)
        // An SOA for another owner is not the hint.
        var message = DNSNotify.request(zone: Z.zone, id: 1)
        message.answers = [DNSRecord(name: Z.name("other.example"), ttl: 0, data: .soa(Z.soa(9)))]
        XCTAssertNil(try DNSNotify(request: message).serial)
    }

    func testResponseEchoesIDAndQuestionWithQRAndAA() throws {
        let request = DNSNotify.request(zone: Z.zone, id: 0x5151, soa: Z.soa(42))
        let response = try DNSNotify(request: request).response
        XCTAssertEqual(response.id, 0x5151)
        XCTAssertEqual(response.questions, request.questions)
        XCTAssertTrue(response.isResponse)
        XCTAssertTrue(response.isAuthoritative)
        XCTAssertEqual(response.opcode, DNSMessage.notifyOpcode)
        XCTAssertEqual(response.rcode, .noError)
        XCTAssertTrue(response.answers.isEmpty)
        XCTAssertEqual(try DNSMessage(decoding: try response.encode()), response)
    }

    func testMalformedRequestsAreRefusedWithAReason() {
        XCTAssertNil(failure { _ in })
        XCTAssertEqual(failure { $0.opcode = 0 }?.code, .notNotify)
        XCTAssertEqual(failure { $0.opcode = 0 }?.responseCode, .notImplemented)
        XCTAssertEqual(failure { $0.isResponse = true }?.code, .isResponse)
        XCTAssertEqual(failure { $0.questions = [] }?.code, .badQuestionCount)
        XCTAssertEqual(failure { $0.questions += $0.questions }?.code, .badQuestionCount)
        XCTAssertEqual(failure { $0.questions[0].type = .A }?.code, .badQuestionType)
        XCTAssertEqual(failure { $0.questions[0].recordClass = .CH }?.code, .badQuestionType)
        XCTAssertEqual(failure { $0.questions[0].type = .A }?.responseCode, .formatError)
    }

    func testErrorResponseKeepsIDOpcodeAndQuestion() {
        let request = DNSNotify.request(zone: Z.zone, id: 9)
        let response = DNSNotify.errorResponse(to: request, rcode: .notAuthoritative)
        XCTAssertEqual(response.id, 9)
        XCTAssertEqual(response.opcode, DNSMessage.notifyOpcode)
        XCTAssertEqual(response.rcode, .notAuthoritative)
        XCTAssertEqual(response.questions, request.questions)
        XCTAssertTrue(response.isResponse)
    }
}
