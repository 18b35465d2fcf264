import DNSWire
import XCTest

/// The TSIG record codec and the bytes TSIG signs.
final class DNSTSIGRecordTests: XCTestCase {
    private func record() throws -> DNSTSIGRecord {
        DNSTSIGRecord(
            keyName: try DNSName("Key.Example"), algorithm: try DNSName("hmac-sha256"),
            timeSigned: 0x1234_5678_9ABC, fudge: 300, mac: Array(0..<32), originalID: 0xBEEF, error: 18,
            otherData: [0, 0, 0x65, 0x53, 0xF1, 0]
        )
    }

    func testRdataRoundTripsThroughAMessage() throws {
        let tsig = try record()
        var message = DNSMessage.axfrQuery(zone: try DNSName("example.com"), id: 7)
        message.additionals.append(tsig.record)
        let received = try DNSReceivedMessage(decoding: try message.encode())
        XCTAssertEqual(try received.tsigRecord(), tsig)
        XCTAssertEqual(try received.tsigRecord()?.timeSigned, 0x1234_5678_9ABC)
    }

    func testWireRecordAppendsLikeTheEncoderAndSplitsBack() throws {
        let tsig = try record()
        let query = try DNSMessage.axfrQuery(zone: try DNSName("example.com"), id: 7).encode()
        let signed = try DNSMessage.appending(wireRecord: tsig.wireRecord, to: query)
        let received = try DNSReceivedMessage(decoding: signed)
        XCTAssertEqual(received.message.additionals.count, 1)
        XCTAssertEqual(received.lastAdditionalOffset, query.count)
        // The bytes before the TSIG record, ID replaced by Original ID (RFC 8945 §4.3.2).
        var expected = query
        expected[0] = 0xBE
        expected[1] = 0xEF
        XCTAssertEqual(received.bytesWithoutLastAdditional(originalID: 0xBEEF), expected)
    }

    func testEveryTruncationOfTheRdataFails() throws {
        let tsig = try record()
        let rdata = tsig.rdata
        for length in 0..<rdata.count {
            let cut = DNSRecord(name: tsig.keyName, recordClass: .ANY, ttl: 0, data: .opaque(.TSIG, Array(rdata.prefix(length))))
            XCTAssertThrowsError(try DNSTSIGRecord(cut), "length \(length)")
        }
        let long = DNSRecord(name: tsig.keyName, recordClass: .ANY, ttl: 0, data: .opaque(.TSIG, rdata + [0]))
        XCTAssertThrowsError(try DNSTSIGRecord(long))
    }

    func testWrongClassTTLOrTypeIsRejected() throws {
        let tsig = try record()
        var wrongClass = tsig.record
        wrongClass.recordClass = .IN
        XCTAssertThrowsError(try DNSTSIGRecord(wrongClass))
        var wrongTTL = tsig.record
        wrongTTL.ttl = 1
        XCTAssertThrowsError(try DNSTSIGRecord(wrongTTL))
        XCTAssertThrowsError(try DNSTSIGRecord(DNSRecord(name: tsig.keyName, ttl: 0, data: .a([1, 2, 3, 4]))))
    }

    func testTSIGBeforeTheLastAdditionalIsRejected() throws {
        let tsig = try record()
        var message = DNSMessage.axfrQuery(zone: try DNSName("example.com"), id: 7)
        message.additionals = [tsig.record, .opt()]
        let received = try DNSReceivedMessage(decoding: try message.encode())
        XCTAssertThrowsError(try received.tsigRecord())
        message.additionals = [.opt()]
        XCTAssertNil(try DNSReceivedMessage(decoding: try message.encode()).tsigRecord())
    }

    func testDigestVariablesAreCanonical() throws {
        let tsig = try record()
        let variables = tsig.digestVariables()
        // Lower-cased key name, class ANY, TTL 0, algorithm, 48-bit time, fudge, error, other.
        let expected: [UInt8] = [3] + Array("key".utf8) + [7] + Array("example".utf8) + [0, 0x00, 0xFF, 0, 0, 0, 0]
            + [11] + Array("hmac-sha256".utf8) + [0, 0x12, 0x34, 0x56, 0x78, 0x9A, 0xBC, 0x01, 0x2C, 0, 18, 0, 6]
            + [0, 0, 0x65, 0x53, 0xF1, 0]
        XCTAssertEqual(variables, expected)
        XCTAssertEqual(tsig.digestVariables(timersOnly: true), [0x12, 0x34, 0x56, 0x78, 0x9A, 0xBC, 0x01, 0x2C])
    }

    func testTransferQueries() throws {
        let zone = try DNSName("example.com")
        let soa = DNSSOA(primaryServer: try DNSName("ns1.example.com"), responsible: try DNSName("h.example.com"),
                         serial: 5, refresh: 1, retry: 2, expire: 3, minimum: 4)
        let axfr = DNSMessage.axfrQuery(zone: zone, id: 9)
        XCTAssertEqual(axfr.questions, [DNSQuestion(name: zone, type: .AXFR)])
        XCTAssertFalse(axfr.recursionDesired)
        XCTAssertEqual(DNSMessage.soaQuery(zone: zone, id: 9).questions.first?.type, .SOA)
        let ixfr = DNSMessage.ixfrQuery(zone: zone, id: 9, current: soa)
        XCTAssertEqual(ixfr.questions.first?.type, .IXFR)
        XCTAssertEqual(ixfr.authorities, [DNSRecord(name: zone, ttl: 0, data: .soa(soa))])
        let decoded = try DNSMessage(decoding: try ixfr.encode())
        XCTAssertEqual(decoded, ixfr)
        XCTAssertEqual(DNSRecordType.IXFR.description, "IXFR")
        XCTAssertEqual(DNSRecordType(name: "axfr"), .AXFR)
    }
}
