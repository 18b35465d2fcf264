import DNSWire
import DNSZoneTransfer
import HTTPDNSCore
import XCTest

/// Signing and verifying single messages (RFC 8945 §4–§5), against the independent vectors of
/// ``TSIGVectors`` and by round trip.
final class DNSTSIGTests: XCTestCase {
    private let now = TSIGVectors.time

    private func assertTSIG(
        _ code: DNSTSIGError.Code, _ note: String = "", file: StaticString = #filePath, line: UInt = #line,
        _ body: () throws -> Void
    ) {
        do {
            try body()
            XCTFail("expected \(code) \(note)", file: file, line: line)
        } catch let error as DNSTSIGError {
            XCTAssertEqual(error.code, code, "\(error) \(note)", file: file, line: line)
        } catch {
            XCTFail("expected DNSTSIGError \(code), got \(error) \(note)", file: file, line: line)
        }
    }

    func testSignedQueryMatchesTheIndependentVector() throws {
        let query = DNSMessage.axfrQuery(zone: try DNSName("example.com"), id: 0x1234)
        let signed = try DNSTSIG.sign(query, key: try TSIGVectors.key(), now: now)
        XCTAssertEqual(HTTPDNSCrypto.hexEncode(signed.bytes), HTTPDNSCrypto.hexEncode(TSIGVectors.query))
        XCTAssertEqual(signed.mac, TSIGVectors.queryMAC)
    }

    func testFirstResponseOfTheIndependentVectorVerifies() throws {
        let received = try DNSReceivedMessage(decoding: TSIGVectors.m1)
        let record = try DNSTSIG.verify(received, key: try TSIGVectors.key(), requestMAC: TSIGVectors.queryMAC, now: now + 1)
        XCTAssertEqual(record.timeSigned, now + 1)
        XCTAssertEqual(record.mac.count, 32)
        // The same message is not a valid response to another request MAC.
        assertTSIG(.badSignature) {
            try DNSTSIG.verify(received, key: try TSIGVectors.key(), requestMAC: Array(repeating: 0, count: 32), now: now)
        }
    }

    func testRequestVerifiesAsARequest() throws {
        // What a secondary does with a signed NOTIFY: verify without a request MAC (§5.2).
        let received = try DNSReceivedMessage(decoding: TSIGVectors.query)
        XCTAssertEqual(try DNSTSIG.verify(received, key: try TSIGVectors.key(), requestMAC: nil, now: now).mac, TSIGVectors.queryMAC)
    }

    func testResponseSignedHereVerifiesAgainstItsRequest() throws {
        let key = try TSIGVectors.key()
        let notify = DNSNotify.request(zone: try DNSName("example.com"), id: 77)
        let request = try DNSTSIG.sign(notify, key: key, now: now)
        let requestRecord = try DNSTSIG.verify(try DNSReceivedMessage(decoding: request.bytes), key: key, requestMAC: nil, now: now + 5)
        let answer = try DNSNotify(request: try DNSMessage(decoding: request.bytes)).response
        let response = try DNSTSIG.sign(answer, key: key, now: now + 5, requestMAC: requestRecord.mac)
        XCTAssertNoThrow(try DNSTSIG.verify(try DNSReceivedMessage(decoding: response.bytes), key: key, requestMAC: request.mac, now: now + 6))
    }

    func testOneFlippedBitAnywhereFailsVerification() throws {
        // Every byte of the signed response: decoding fails, or verification does. The header ID
        // (bytes 0–1) is the exception by design: the MAC covers Original ID instead, so that a
        // forwarder may change the ID (RFC 8945 §4.3.2); the transfer reader checks the ID itself.
        let key = try TSIGVectors.key()
        let original = TSIGVectors.m1
        for index in original.indices.dropFirst(2) {
            for bit in [0x01, 0x80, 0xFF] as [UInt8] {
                var bytes = original
                bytes[index] ^= bit
                guard let received = try? DNSReceivedMessage(decoding: bytes) else { continue }
                XCTAssertThrowsError(
                    try DNSTSIG.verify(received, key: key, requestMAC: TSIGVectors.queryMAC, now: now + 1),
                    "byte \(index) bit \(bit)"
                )
            }
        }
    }

    func testChangedHeaderIDStillVerifiesThroughOriginalID() throws {
        var bytes = TSIGVectors.m1
        bytes[0] ^= 0xFF
        XCTAssertNoThrow(try DNSTSIG.verify(try DNSReceivedMessage(decoding: bytes), key: try TSIGVectors.key(), requestMAC: TSIGVectors.queryMAC, now: now + 1))
    }

    func testUnknownKeyNameIsBadKey() throws {
        let other = try DNSTSIGKey(name: try DNSName("other-key.example"), secret: try TSIGVectors.key().secret)
        assertTSIG(.badKey) {
            try DNSTSIG.verify(try DNSReceivedMessage(decoding: TSIGVectors.query), key: other, requestMAC: nil, now: self.now)
        }
        // Same name, another secret: the MAC fails instead.
        let wrongSecret = try DNSTSIGKey(name: try DNSName(TSIGVectors.keyName), secret: [1, 2, 3])
        assertTSIG(.badSignature) {
            try DNSTSIG.verify(try DNSReceivedMessage(decoding: TSIGVectors.query), key: wrongSecret, requestMAC: nil, now: self.now)
        }
    }

    func testTimeOutsideTheFudgeIsBadTime() throws {
        let key = try TSIGVectors.key()
        let received = try DNSReceivedMessage(decoding: TSIGVectors.query)
        XCTAssertNoThrow(try DNSTSIG.verify(received, key: key, requestMAC: nil, now: now + 300))
        XCTAssertNoThrow(try DNSTSIG.verify(received, key: key, requestMAC: nil, now: now - 300))
        assertTSIG(.badTime) { try DNSTSIG.verify(received, key: key, requestMAC: nil, now: self.now + 301) }
        assertTSIG(.badTime) { try DNSTSIG.verify(received, key: key, requestMAC: nil, now: self.now - 301) }
        assertTSIG(.badTime) { try DNSTSIG.verify(received, key: key, requestMAC: nil, now: 0) }
    }

    func testMissingTSIGIsRefused() throws {
        let plain = try DNSMessage.axfrQuery(zone: try DNSName("example.com"), id: 1).encode()
        assertTSIG(.missingSignature) {
            try DNSTSIG.verify(try DNSReceivedMessage(decoding: plain), key: try TSIGVectors.key(), requestMAC: nil, now: self.now)
        }
    }

    /// Replaces the TSIG record of `bytes` with `change` applied to it.
    private func rewriteTSIG(_ bytes: [UInt8], _ change: (inout DNSTSIGRecord) -> Void) throws -> DNSReceivedMessage {
        let received = try DNSReceivedMessage(decoding: bytes)
        var record = try XCTUnwrap(try received.tsigRecord())
        change(&record)
        let unsigned = received.bytesWithoutLastAdditional(originalID: UInt16(bytes[0]) << 8 | UInt16(bytes[1]))
        return try DNSReceivedMessage(decoding: try DNSMessage.appending(wireRecord: record.wireRecord, to: unsigned))
    }

    func testTruncatedMACIsRefused() throws {
        let received = try rewriteTSIG(TSIGVectors.query) { $0.mac = Array($0.mac.prefix(16)) }
        assertTSIG(.truncatedMAC) { try DNSTSIG.verify(received, key: try TSIGVectors.key(), requestMAC: nil, now: self.now) }
        let empty = try rewriteTSIG(TSIGVectors.query) { $0.mac = [] }
        assertTSIG(.truncatedMAC) { try DNSTSIG.verify(empty, key: try TSIGVectors.key(), requestMAC: nil, now: self.now) }
        let long = try rewriteTSIG(TSIGVectors.query) { $0.mac += [0] }
        assertTSIG(.badSignature) { try DNSTSIG.verify(long, key: try TSIGVectors.key(), requestMAC: nil, now: self.now) }
    }

    func testOtherAlgorithmInTheRecordIsBadKey() throws {
        let received = try rewriteTSIG(TSIGVectors.query) { $0.algorithm = (try? DNSName("hmac-sha1")) ?? .root }
        assertTSIG(.badKey) { try DNSTSIG.verify(received, key: try TSIGVectors.key(), requestMAC: nil, now: self.now) }
    }

    func testPeerTSIGErrorIsReported() throws {
        // A primary that did not know our key answers BADKEY with an empty MAC (RFC 8945 §5.3.2).
        let received = try rewriteTSIG(TSIGVectors.m1) {
            $0.error = 17
            $0.mac = []
        }
        assertTSIG(.peerError) {
            try DNSTSIG.verify(received, key: try TSIGVectors.key(), requestMAC: TSIGVectors.queryMAC, now: self.now + 1)
        }
    }

    func testTSIGThatIsNotLastIsMalformed() throws {
        var message = try DNSMessage(decoding: TSIGVectors.query)
        message.additionals.append(.opt())
        assertTSIG(.malformed) {
            try DNSTSIG.verify(try DNSReceivedMessage(decoding: try message.encode()), key: try TSIGVectors.key(), requestMAC: nil, now: self.now)
        }
    }

    func testErrorsMapToTSIGRcodes() {
        XCTAssertEqual(DNSTSIGError(.badSignature).tsigErrorCode, 16)
        XCTAssertEqual(DNSTSIGError(.badKey).tsigErrorCode, 17)
        XCTAssertEqual(DNSTSIGError(.badTime).tsigErrorCode, 18)
        XCTAssertNil(DNSTSIGError(.malformed).tsigErrorCode)
    }
}
