import DNSWire
import XCTest

final class DNSQueryEncodingTests: XCTestCase {
    /// Cloudflare's RFC 8484 example query (shared/reference/provider-apis.md, "DNS over HTTPS").
    func testGoldenQueryForWwwExampleComA() throws {
        let golden = hexBytes(
            "00 00 01 00 00 01 00 00 00 00 00 00 03 77 77 77 07 65 78 61 6d 70 6c 65 03 63 6f 6d 00 00 01 00 01"
        )
        let query = DNSMessage.query(name: try DNSName("www.example.com"), type: .A, id: 0, recursionDesired: true)
        XCTAssertEqual(query.count, 33)
        XCTAssertEqual(query, golden)
        let decoded = try DNSMessage(decoding: golden)
        XCTAssertEqual(decoded, DNSMessage.makeQuery(name: try DNSName("www.example.com."), type: .A))
        XCTAssertTrue(decoded.recursionDesired)
        XCTAssertFalse(decoded.isResponse)
    }

    func testQueryWithEDNSAddsOPTRecord() throws {
        let query = DNSMessage.query(name: try DNSName("example.com"), type: .AAAA, id: 0xBEEF, edns: DNSEDNS())
        // Header ARCOUNT = 1, then the OPT record: root, TYPE 41, CLASS 1232, TTL 0, RDLENGTH 0.
        XCTAssertEqual(Array(query[0..<2]), [0xBE, 0xEF])
        XCTAssertEqual(Array(query[10..<12]), [0, 1])
        XCTAssertEqual(Array(query.suffix(11)), [0, 0, 41, 0x04, 0xD0, 0, 0, 0, 0, 0, 0])
        let decoded = try DNSMessage(decoding: query)
        XCTAssertEqual(decoded.edns?.udpPayloadSize, 1232)
        XCTAssertEqual(decoded.edns?.dnssecOK, false)
        XCTAssertEqual(decoded.questions.first?.type, .AAAA)
    }

    func testHeaderFlagAccessorsTouchOnlyTheirBits() {
        var message = DNSMessage()
        message.isResponse = true
        message.opcode = 5
        message.isAuthoritative = true
        message.isTruncated = true
        message.recursionDesired = true
        message.recursionAvailable = true
        message.authenticData = true
        message.checkingDisabled = true
        message.rcode = .nameError
        XCTAssertEqual(message.flags, 0b1_0101_1_1_1_1_0_1_1_0011)
        message.isTruncated = false
        message.opcode = 0
        message.rcode = .noError
        XCTAssertEqual(message.flags, 0b1_0000_1_0_1_1_0_1_1_0000)
        XCTAssertEqual(message.rcode, .noError)
    }

    func testResponseSkeletonCopiesIDAndQuestion() throws {
        let query = DNSMessage.makeQuery(name: try DNSName("a.test"), type: .A, id: 77)
        let response = DNSMessage.response(to: query, rcode: .nameError)
        XCTAssertEqual(response.id, 77)
        XCTAssertTrue(response.isResponse)
        XCTAssertTrue(response.recursionDesired)
        XCTAssertEqual(response.rcode, .nameError)
        XCTAssertTrue(response.hasSameQuestions(as: query))
    }

    func testEncodeRejectsAddressOfWrongSize() throws {
        var message = DNSMessage(id: 1)
        message.answers = [DNSRecord(name: try DNSName("a.test"), ttl: 1, data: .a([1, 2, 3]))]
        XCTAssertThrowsError(try message.encode()) { error in
            let wire = error as? DNSWireError
            XCTAssertEqual(wire?.code, .invalidRecord)
            XCTAssertEqual(wire?.section, .answer)
            XCTAssertEqual(wire?.index, 1)
        }
    }

    func testEncodeRejectsOverlongTXTString() throws {
        var message = DNSMessage(id: 1)
        message.answers = [DNSRecord(name: try DNSName("t.test"), ttl: 1, data: .txt([Array(repeating: 0x61, count: 256)]))]
        XCTAssertThrowsError(try message.encode()) { XCTAssertEqual(($0 as? DNSWireError)?.code, .invalidRecord) }
    }

    func testRecordTypeNames() {
        XCTAssertEqual(DNSRecordType.AAAA.description, "AAAA")
        XCTAssertEqual(DNSRecordType(999).description, "TYPE999")
        XCTAssertEqual(DNSRecordType(name: "cname"), .CNAME)
        XCTAssertEqual(DNSRecordType(name: "TYPE65"), .HTTPS)
        XCTAssertNil(DNSRecordType(name: "bogus"))
    }
}
