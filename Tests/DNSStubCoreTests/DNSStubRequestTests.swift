import DNSWire
import Foundation
import DNSStubCore
import HTTPDNSCore
import XCTest

/// Reading received messages: what is resolved, answered at once or dropped (RFC 1035, 6891, 7871).
final class DNSStubRequestTests: XCTestCase {
    private typealias F = StubFixture

    private func rejection(_ bytes: [UInt8], file: StaticString = #filePath, line: UInt = #line) -> DNSStubRejection? {
        guard case .reject(let rejection) = DNSStubRequest.read(bytes, transport: .udp) else {
            XCTFail("not rejected: \(DNSStubRequest.read(bytes, transport: .udp))", file: file, line: line)
            return nil
        }
        return rejection
    }

    func testQueryKeepsIDQuestionCaseAndFlags() throws {
        let bytes = F.query("WwW.ExAmPlE.CoM", .MX, id: 0x1234) { $0.checkingDisabled = true; $0.authenticData = true }
        let request = try XCTUnwrap(F.request(bytes))
        XCTAssertEqual(request.id, 0x1234)
        XCTAssertEqual(request.question.name.labels.map { String(decoding: $0, as: UTF8.self) }, ["WwW", "ExAmPlE", "CoM"])
        XCTAssertEqual(request.question.type, .MX)
        XCTAssertTrue(request.recursionDesired)
        XCTAssertTrue(request.checkingDisabled)
        XCTAssertTrue(request.authenticData)
        XCTAssertNil(request.edns)
        XCTAssertFalse(request.dnssecOK)
    }

    func testEDNSPayloadSizeAndDOBit() throws {
        let request = try XCTUnwrap(F.request(F.query(edns: DNSEDNS(udpPayloadSize: 4096, dnssecOK: true))))
        XCTAssertEqual(request.edns?.udpPayloadSize, 4096)
        XCTAssertTrue(request.dnssecOK)
        XCTAssertNil(request.edns?.clientSubnet)
    }

    func testResponseSizeLimits() throws {
        func limit(_ edns: DNSEDNS?, _ transport: DNSStubTransport = .udp, cap: Int = 1232) throws -> Int {
            try XCTUnwrap(F.request(F.query(edns: edns), transport: transport)).responseSizeLimit(maxUDPPayloadSize: cap)
        }
        XCTAssertEqual(try limit(nil), 512, "RFC 1035 §4.2.1")
        XCTAssertEqual(try limit(DNSEDNS(udpPayloadSize: 100)), 512, "RFC 6891 §6.2.5: below 512 counts as 512")
        XCTAssertEqual(try limit(DNSEDNS(udpPayloadSize: 900)), 900)
        XCTAssertEqual(try limit(DNSEDNS(udpPayloadSize: 4096)), 1232, "capped at the stub's maximum")
        XCTAssertEqual(try limit(DNSEDNS(udpPayloadSize: 65535), cap: 9000), 4096, "the cap itself stays within 4096")
        XCTAssertEqual(try limit(DNSEDNS(udpPayloadSize: 4096), cap: 100), 512)
        XCTAssertEqual(try limit(nil, .tcp), 65535)
        XCTAssertEqual(try limit(DNSEDNS(udpPayloadSize: 512), .tcp), 65535)
    }

    func testClientSubnetIsReadAndChecked() throws {
        let good: [UInt8] = [0, 8, 0, 7, 0, 1, 24, 0, 198, 51, 100]
        let request = try XCTUnwrap(F.request(F.query(edns: DNSEDNS(options: good))))
        XCTAssertEqual(request.edns?.clientSubnet?.family, 1)
        XCTAssertEqual(request.edns?.clientSubnet?.sourcePrefixLength, 24)
        XCTAssertEqual(request.edns?.clientSubnet?.address, [198, 51, 100])
        XCTAssertEqual(request.edns?.clientSubnet?.option, good)
        // RFC 7871 §6: bits past the prefix, a scope in a query, the wrong number of octets.
        for bad: [UInt8] in [
            [0, 8, 0, 7, 0, 1, 23, 0, 198, 51, 101], [0, 8, 0, 7, 0, 1, 24, 8, 198, 51, 100],
            [0, 8, 0, 8, 0, 1, 24, 0, 198, 51, 100, 0], [0, 8, 0, 7, 0, 3, 24, 0, 198, 51, 100], [0, 8, 0, 2, 0, 1],
        ] {
            let rejection = try XCTUnwrap(rejection(F.query(edns: DNSEDNS(options: bad))))
            XCTAssertEqual(rejection.error.code, .badClientSubnet, "\(bad)")
            XCTAssertEqual(rejection.error.responseCode, .formatError)
        }
        // Options cut short are a malformed OPT record.
        XCTAssertEqual(rejection(F.query(edns: DNSEDNS(options: [0, 10, 0, 8, 1])))?.error.code, .badOPT)
    }

    func testShortMessagesAndResponsesAreDropped() {
        for count in 0..<12 {
            XCTAssertEqual(DNSStubRequest.read(Array(F.query().prefix(count)), transport: .udp), .drop(DNSStubRequestError(.tooShort, "\(count) bytes")))
        }
        let response = F.query { $0.isResponse = true }
        guard case .drop(let error) = DNSStubRequest.read(response, transport: .udp) else { return XCTFail("answered a response") }
        XCTAssertEqual(error.code, .isResponse)
        XCTAssertNil(error.responseCode)
    }

    func testEveryTruncationIsDroppedOrFORMERRWithTheID() {
        let valid = F.query("www.example.com", .AAAA, id: 0x4242, edns: DNSEDNS(dnssecOK: true))
        for count in 12..<valid.count {
            guard case .reject(let rejection) = DNSStubRequest.read(Array(valid.prefix(count)), transport: .udp) else {
                return XCTFail("prefix of \(count) bytes not rejected")
            }
            XCTAssertEqual(rejection.error.code, .malformed)
            XCTAssertEqual(rejection.id, 0x4242)
            XCTAssertNil(rejection.question)
            XCTAssertNil(rejection.edns)
        }
    }

    func testReactions() throws {
        XCTAssertEqual(rejection(F.query { $0.opcode = 5 })?.error.code, .notQuery)
        XCTAssertEqual(rejection(F.query { $0.opcode = 5 })?.error.responseCode, .notImplemented)
        XCTAssertEqual(rejection(F.query { $0.questions = [] })?.error.code, .badQuestionCount)
        XCTAssertEqual(rejection(F.query { $0.questions += $0.questions })?.error.code, .badQuestionCount)
        XCTAssertEqual(rejection(F.query { $0.questions += $0.questions })?.error.responseCode, .formatError)
        let twoOPT = F.query(edns: DNSEDNS()) { $0.additionals.append(.opt()) }
        XCTAssertEqual(rejection(twoOPT)?.error.code, .badOPT)
        XCTAssertEqual(rejection(F.query { $0.answers = [.opt()] })?.error.code, .badOPT)
        let version1 = try XCTUnwrap(rejection(F.query(edns: DNSEDNS(version: 1))))
        XCTAssertEqual(version1.error.code, .badVersion)
        XCTAssertEqual(version1.error.responseCode, .badVersion)
        XCTAssertNotNil(version1.edns)
        XCTAssertNotNil(version1.question)
        for type in [DNSRecordType.AXFR, .IXFR] {
            let transfer = try XCTUnwrap(rejection(F.query("example.com", type)))
            XCTAssertEqual(transfer.error.code, .unsupportedType)
            XCTAssertEqual(transfer.error.responseCode, .refused)
            XCTAssertEqual(transfer.error.extendedError?.infoCode, .notSupported)
        }
        // Any other type and class is resolved.
        for type in [DNSRecordType.TXT, .HTTPS, .SRV, .ANY, DNSRecordType(65000)] {
            XCTAssertNotNil(F.request(F.query("www.example.com", type)))
        }
    }

    func testFrontRefusesStrangersAndDropsTheirGarbage() throws {
        let front = DNSStubFront()
        guard case .reply(let bytes, let reason) = front.receive(F.query(), transport: .udp, clientAllowed: false) else {
            return XCTFail("not refused")
        }
        XCTAssertEqual(reason.code, .notAllowed)
        XCTAssertEqual(F.decode(bytes)?.rcode, .refused)
        guard case .drop(let error) = front.receive(F.query { $0.questions = [] }, transport: .udp, clientAllowed: false) else {
            return XCTFail("answered a stranger's malformed query")
        }
        XCTAssertEqual(error.code, .notAllowed)
        guard case .resolve(let request) = front.receive(F.query(), transport: .tcp, clientAllowed: true) else {
            return XCTFail("not resolved")
        }
        XCTAssertEqual(request.transport, .tcp)
    }

    /// The fuzz target's seeds (Fuzz/seeds.py) do what their names say, so that the corpus covers
    /// every reaction.
    func testFuzzSeedsCoverEveryReaction() throws {
        let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Fuzz/Corpus/stub-front")
        let expected: [String: String] = [
            "a": "query", "mixed-case-aaaa": "query", "many-no-edns": "query", "many-edns-600": "query",
            "do-cd-https": "query", "ecs": "query", "query-with-chain": "query", "ecs-bad-bits": "badClientSubnet",
            "edns-version-1": "badVersion", "two-opt": "badOPT", "update-opcode": "notQuery", "response": "isResponse",
            "qdcount-2": "badQuestionCount", "qdcount-0": "badQuestionCount", "header-only-qdcount-1": "malformed",
            "eleven-bytes": "tooShort", "axfr": "unsupportedType",
        ]
        for (name, outcome) in expected {
            let bytes = Array(try Data(contentsOf: folder.appendingPathComponent(name)))
            let seen: String
            switch DNSStubRequest.read(bytes, transport: .udp) {
            case .query: seen = "query"
            case .reject(let rejection): seen = "\(rejection.error.code)"
            case .drop(let error): seen = "\(error.code)"
            }
            XCTAssertEqual(seen, outcome, name)
        }
    }

    /// Seeded mutations of valid queries: every message is dropped or answered with its ID and QR,
    /// within 512 bytes over UDP (the fuzz target's property, run here on every `make test`).
    func testMutatedQueriesAreDroppedOrAnsweredWithinTheLimit() throws {
        var generator = SeededGenerator(seed: 0x57AB)
        let seeds = [
            F.query("WwW.Example.COM", .AAAA, edns: DNSEDNS(udpPayloadSize: 4096, dnssecOK: true, options: [0, 8, 0, 7, 0, 1, 24, 0, 198, 51, 100])),
            F.query("a.b.c.example.net", .TXT),
        ]
        let front = DNSStubFront()
        var outcomes: [String: Int] = [:]
        for round in 0..<3000 {
            var bytes = seeds[round % seeds.count]
            for _ in 0...Int.random(in: 0..<4, using: &generator) {
                let position = Int.random(in: 0..<bytes.count, using: &generator)
                switch Int.random(in: 0..<3, using: &generator) {
                case 0: bytes[position] = UInt8.random(in: 0...255, using: &generator)
                case 1: bytes.removeSubrange(position...)
                default: bytes.insert(UInt8.random(in: 0...255, using: &generator), at: position)
                }
                if bytes.isEmpty { break }
            }
            switch front.receive(bytes, transport: .udp, clientAllowed: true) {
            case .drop:
                outcomes["drop", default: 0] += 1
            case .reply(let answer, let reason):
                outcomes["\(reason.code)", default: 0] += 1
                let message = try XCTUnwrap(F.decode(answer))
                XCTAssertEqual(message.id, UInt16(bytes[0]) << 8 | UInt16(bytes[1]))
                XCTAssertTrue(message.isResponse)
                XCTAssertLessThanOrEqual(answer.count, 512)
            case .resolve(let request):
                outcomes["resolve", default: 0] += 1
                let many = DNSStubResponse(answers: (0..<200).map { F.a("www.example.com", UInt8($0)) })
                let answer = front.encode(many, for: request)
                XCTAssertLessThanOrEqual(answer.count, request.responseSizeLimit())
                XCTAssertEqual(F.decode(answer)?.questions.first?.name.labels, request.question.name.labels)
            }
        }
        XCTAssertGreaterThan(outcomes["resolve", default: 0], 100, "\(outcomes)")
        XCTAssertGreaterThan(outcomes["malformed", default: 0], 100, "\(outcomes)")
    }
}
