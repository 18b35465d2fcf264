import DNSWire
import DNSStubCore
import HTTPDNSCore
import XCTest

/// Shaping answers: golden bytes checked by hand against RFC 1035 §4.1, RFC 6891 §6.1 and RFC 8914
/// §2, case preservation, AD/DO/CD rules and the UDP size limit.
final class DNSStubResponseTests: XCTestCase {
    private typealias F = StubFixture

    /// `WwW.Example.COM IN A`: the question as a client with 0x20 case randomisation asks it.
    private let question = unhex("03577757" + "074578616d706c65" + "03434f4d" + "00" + "00010001")
    private let front = DNSStubFront()

    private func reply(_ bytes: [UInt8], allowed: Bool = true, file: StaticString = #filePath, line: UInt = #line) -> [UInt8] {
        guard case .reply(let answer, _) = front.receive(bytes, transport: .udp, clientAllowed: allowed) else {
            XCTFail("no immediate reply", file: file, line: line)
            return []
        }
        return answer
    }

    private func request(_ bytes: [UInt8], _ transport: DNSStubTransport = .udp) throws -> DNSStubRequest {
        try XCTUnwrap(F.request(bytes, transport: transport))
    }

    // MARK: Golden vectors

    func testFORMERRForAHeaderWithoutItsQuestion() {
        // QDCOUNT 1 but no question: ID kept, QR RD RA, RCODE 1, every count 0.
        XCTAssertEqual(reply(unhex("beef01000001000000000000")), unhex("beef8181" + "0000000000000000"))
        guard case .drop = front.receive(unhex("beef010000010000000000"), transport: .udp, clientAllowed: true) else {
            return XCTFail("11 bytes answered")
        }
    }

    func testNOTIMPForAnUPDATE() {
        // OPCODE 5 (0x2800): echoed, QR RA, RCODE 4, no question (the header alone is read).
        XCTAssertEqual(reply(unhex("123428000001000000000000") + question), unhex("1234a884" + "0000000000000000"))
    }

    func testBADVERSForEDNSVersion1() {
        // OPT: root, TYPE 41, CLASS 4096, TTL ext-RCODE 0 version 1, RDLEN 0.
        let query = unhex("beef01000001000000000001") + question + unhex("00" + "0029" + "1000" + "00010000" + "0000")
        // BADVERS = 16: header RCODE 0, OPT extended RCODE 1, version 0, our size 1232 (0x04d0).
        let expected = unhex("beef81800001000000000001") + question + unhex("00" + "0029" + "04d0" + "01000000" + "0000")
        XCTAssertEqual(reply(query), expected)
    }

    func testREFUSEDWithProhibitedForAClientNotAllowed() {
        let query = unhex("beef01000001000000000001") + question + unhex("00" + "0029" + "04d0" + "00008000" + "0000")
        // DO echoed (0x8000); option 15, length 28, INFO-CODE 18, "client not in --allow-from".
        let expected = unhex("beef81850001000000000001") + question
            + unhex("00" + "0029" + "04d0" + "00008000" + "0020" + "000f" + "001c" + "0012") + bytes("client not in --allow-from")
        XCTAssertEqual(reply(query, allowed: false), expected)
        // Without EDNS: the RCODE alone.
        XCTAssertEqual(reply(unhex("beef01000001000000000000") + question, allowed: false), unhex("beef81850001000000000000") + question)
    }

    func testSERVFAILWithExtendedErrorOnlyForEDNSClients() throws {
        let failure = DNSStubResponse.serverFailure(.noReachableAuthority, "no upstream answered")
        let edns = try request(unhex("beef01000001000000000001") + question + unhex("00" + "0029" + "1000" + "00000000" + "0000"))
        XCTAssertEqual(front.encode(failure, for: edns), unhex("beef81820001000000000001") + question
            + unhex("00" + "0029" + "04d0" + "00000000" + "001a" + "000f" + "0016" + "0016") + bytes("no upstream answered"))
        let plain = try request(unhex("beef01000001000000000000") + question)
        XCTAssertEqual(front.encode(failure, for: plain), unhex("beef81820001000000000000") + question)
    }

    func testTruncatedToHeaderAndQuestionWithTC() throws {
        let plain = try request(unhex("beef01000001000000000000") + question)
        let many = DNSStubResponse(answers: (1...40).map { F.a("www.example.com", $0) })
        XCTAssertEqual(front.encode(many, for: plain), unhex("beef83800001000000000000") + question)
        // Over TCP the same answer goes whole.
        let tcp = try request(unhex("beef01000001000000000000") + question, .tcp)
        let whole = try XCTUnwrap(F.decode(front.encode(many, for: tcp)))
        XCTAssertFalse(whole.isTruncated)
        XCTAssertEqual(whole.answers.count, 40)
    }

    func testExtendedErrorOptionBytes() {
        let error = DNSExtendedError(.networkError, "é")
        XCTAssertEqual(error.option, [0, 15, 0, 4, 0, 23, 0xC3, 0xA9])
        XCTAssertEqual(DNSExtendedError(.other).option, [0, 15, 0, 2, 0, 0])
        XCTAssertEqual(DNSExtendedError.first(in: [0, 10, 0, 1, 9] + error.option), error)
        XCTAssertNil(DNSExtendedError.first(in: [0, 15, 0, 1, 0]))
        // Long text is cut at a character boundary.
        let long = DNSExtendedError(.other, String(repeating: "é", count: 101)).option
        XCTAssertEqual(long.count, 6 + DNSExtendedError.maxExtraTextBytes)
    }

    /// Issue 32: three DoH upstreams' reasons were cut at 128 bytes in the middle of the last URL,
    /// so the last reason was lost. Each reason now keeps what went wrong; names give way first.
    func testLongReasonsFromSeveralUpstreamsKeepEveryReason() {
        let text = [
            "doh https://dns.google/dns-query: timed out after 5 s",
            "doh https://cloudflare-dns.com/dns-query: connection refused by 1.1.1.1",
            "doh https://doh.pub/dns-query?bootstrap=1.12.12.12: TLS certificate verify failed",
            "doh https://dns.alidns.com/dns-query: could not resolve the bootstrap",
        ].joined(separator: "; ")
        let fitted = DNSExtendedError.fitted(text, maxBytes: DNSExtendedError.maxExtraTextBytes)
        XCTAssertLessThanOrEqual(fitted.count, DNSExtendedError.maxExtraTextBytes)
        let shown = String(decoding: fitted, as: UTF8.self)
        for reason in ["timed out after 5 s", "connection refused by 1.1.1.1", "TLS certificate verify failed", "could not resolve the bootstrap"] {
            XCTAssertTrue(shown.contains(reason), "\(reason) in \(shown)")
        }
        XCTAssertEqual(shown.components(separatedBy: "; ").count, 4, shown)
        XCTAssertTrue(shown.hasPrefix("doh https://dns.google"), shown)
        // A text that fits is written as it is.
        XCTAssertEqual(DNSExtendedError.fitted("udp 10.0.0.1:53: timed out", maxBytes: 200), Array("udp 10.0.0.1:53: timed out".utf8))
        // Every cut is at a character boundary and within the bound, whatever the text.
        for count in 0..<300 {
            let random = String((0..<count).map { _ in "aé; :/".randomElement()! })
            let bytes = DNSExtendedError.fitted(random, maxBytes: 50)
            XCTAssertLessThanOrEqual(bytes.count, 50)
            XCTAssertNotNil(String(validating: bytes, as: UTF8.self))
        }
    }

    // MARK: The size limit, to the byte

    func testOneByteOverTheLimitIsTruncatedAndAtTheLimitIsNot() throws {
        for (edns, limit) in [(DNSEDNS?.none, 512), (DNSEDNS(udpPayloadSize: 600), 600), (DNSEDNS(udpPayloadSize: 4096), 1232)] {
            let client = try request(F.query("www.example.com", .TXT, edns: edns))
            // Header 12, question 21, TXT with a pointer owner 12 + RDATA, OPT 11 with EDNS.
            let fixed = 12 + 21 + 12 + (edns == nil ? 0 : 11)
            let fits = front.encode(DNSStubResponse(answers: [F.txt("www.example.com", rdataBytes: limit - fixed)]), for: client)
            XCTAssertEqual(fits.count, limit)
            XCTAssertEqual(F.decode(fits)?.isTruncated, false)
            let over = front.encode(DNSStubResponse(answers: [F.txt("www.example.com", rdataBytes: limit - fixed + 1)]), for: client)
            let truncated = try XCTUnwrap(F.decode(over))
            XCTAssertTrue(truncated.isTruncated, "limit \(limit)")
            XCTAssertEqual(truncated.answers, [])
            XCTAssertEqual(truncated.edns != nil, edns != nil)
            XCTAssertEqual(over.count, 33 + (edns == nil ? 0 : 11))
        }
    }

    func testConfiguredCapIsAdvertisedAndApplied() throws {
        var configuration = DNSStubFront.Configuration()
        configuration.maxUDPPayloadSize = 4096
        let big = DNSStubFront(configuration: configuration)
        let client = try request(F.query(edns: DNSEDNS(udpPayloadSize: 4096)))
        let answer = try XCTUnwrap(F.decode(big.encode(DNSStubResponse(answers: (1...100).map { F.a("www.example.com", $0) }), for: client)))
        XCTAssertFalse(answer.isTruncated)
        XCTAssertEqual(answer.edns?.udpPayloadSize, 4096)
    }

    // MARK: Header, question and OPT rules

    func testQuestionCaseAndCNAMEChainPreserved() throws {
        let client = try request(F.query("WwW.ExAmPlE.CoM", id: 0x0102))
        let chain = [
            DNSRecord(name: F.name("www.example.com"), ttl: 60, data: .cname(F.name("edge.example.net"))),
            F.a("edge.example.net", 1), F.a("edge.example.net", 2),
        ]
        let bytes = front.encode(DNSStubResponse(answers: chain), for: client)
        let asked = F.query("WwW.ExAmPlE.CoM", id: 0x0102)
        XCTAssertEqual(Array(bytes[12..<(12 + 21)]), Array(asked[12..<(12 + 21)]), "question echoed byte for byte")
        let answer = try XCTUnwrap(F.decode(bytes))
        XCTAssertEqual(answer.id, 0x0102)
        XCTAssertEqual(answer.answers.map(\.type), [.CNAME, .A, .A])
        XCTAssertEqual(answer.answers.map(\.data), chain.map(\.data))
    }

    func testHeaderBits() throws {
        let client = try request(F.query { $0.checkingDisabled = true; $0.recursionDesired = false })
        var upstream = DNSStubResponse(answers: [F.a("www.example.com", 1)])
        upstream.authenticData = true
        let answer = try XCTUnwrap(F.decode(front.encode(upstream, for: client)))
        XCTAssertTrue(answer.isResponse)
        XCTAssertTrue(answer.recursionAvailable)
        XCTAssertFalse(answer.recursionDesired)
        XCTAssertTrue(answer.checkingDisabled)
        XCTAssertFalse(answer.isAuthoritative)
        XCTAssertFalse(answer.authenticData, "AD only to clients that set DO or AD (RFC 6840 §5.8)")
        XCTAssertNil(answer.edns, "no OPT for a client that sent none")

        let withDO = try request(F.query(edns: DNSEDNS(dnssecOK: true)))
        let validated = try XCTUnwrap(F.decode(front.encode(upstream, for: withDO)))
        XCTAssertTrue(validated.authenticData)
        XCTAssertEqual(validated.edns?.dnssecOK, true, "DO echoed (RFC 3225 §3)")
        XCTAssertEqual(validated.edns?.udpPayloadSize, 1232)
        let withAD = try request(F.query { $0.authenticData = true })
        XCTAssertEqual(F.decode(front.encode(upstream, for: withAD))?.authenticData, true)
        upstream.authenticData = false
        XCTAssertEqual(F.decode(front.encode(upstream, for: withDO))?.authenticData, false, "never set by the stub itself")
    }

    func testDNSSECRecordsOnlyForDOOrWhenAsked() throws {
        let rrsig = DNSRecord(name: F.name("www.example.com"), ttl: 300, data: .opaque(DNSRecordType(46), [1, 2, 3]))
        let response = DNSStubResponse(answers: [F.a("www.example.com", 1), rrsig])
        let plain = try request(F.query())
        XCTAssertEqual(F.decode(front.encode(response, for: plain))?.answers.count, 1)
        let withDO = try request(F.query(edns: DNSEDNS(dnssecOK: true)))
        XCTAssertEqual(F.decode(front.encode(response, for: withDO))?.answers.count, 2, "RRSIGs returned untouched")
        let askedRRSIG = try request(F.query("www.example.com", DNSRecordType(46)))
        XCTAssertEqual(F.decode(front.encode(response, for: askedRRSIG))?.answers.count, 2)
    }

    // MARK: Upstream answers

    func testUpstreamAnswerPassesThroughWithoutItsOPT() throws {
        var upstream = DNSMessage.response(to: DNSMessage.makeQuery(name: F.name("www.example.com"), type: .A, id: 0))
        upstream.rcode = .nameError
        upstream.authorities = [F.soa()]
        upstream.additionals = [.opt(DNSEDNS(options: DNSExtendedError(.other, "upstream says").option))]
        let response = DNSStubResponse(upstream: upstream)
        XCTAssertEqual(response.rcode, .nameError)
        XCTAssertEqual(response.authorities, [F.soa()])
        XCTAssertEqual(response.additionals, [])
        XCTAssertEqual(response.extendedError, DNSExtendedError(.other, "upstream says"))
    }

    func testUpstreamRCODEsAboutTheStubsOwnQueryBecomeSERVFAIL() {
        for rcode in [DNSResponseCode.formatError, .notImplemented, .notAuthoritative] {
            var upstream = DNSMessage()
            upstream.rcode = rcode
            XCTAssertEqual(DNSStubResponse(upstream: upstream), .serverFailure(.networkError, "upstream answered RCODE \(rcode.rawValue)"))
        }
        var badVersion = DNSMessage(additionals: [.opt(DNSEDNS(extendedRCode: 1))])
        badVersion.rcode = .noError
        XCTAssertEqual(DNSStubResponse(upstream: badVersion).rcode, .serverFailure)
        var truncated = DNSMessage(answers: [F.a("www.example.com", 1)])
        truncated.isTruncated = true
        XCTAssertTrue(DNSStubResponse(upstream: truncated).isTruncated)
    }

    func testTruncatedUpstreamAnswerIsSentAsTC() throws {
        let client = try request(F.query(), .tcp)
        let answer = try XCTUnwrap(F.decode(front.encode(DNSStubResponse(answers: [F.a("www.example.com", 1)], isTruncated: true), for: client)))
        XCTAssertTrue(answer.isTruncated)
        XCTAssertEqual(answer.answers, [])
    }

    func testUnencodableRecordsGiveSERVFAIL() throws {
        let client = try request(F.query())
        let broken = DNSStubResponse(answers: [DNSRecord(name: F.name("www.example.com"), ttl: 1, data: .a([1, 2, 3]))])
        XCTAssertEqual(F.decode(front.encode(broken, for: client))?.rcode, .serverFailure)
    }

    func testExtendedRCODEWithoutEDNSBecomesSERVFAIL() throws {
        let client = try request(F.query())
        XCTAssertEqual(F.decode(front.encode(DNSStubResponse(rcode: .badVersion), for: client))?.rcode, .serverFailure)
    }
}
