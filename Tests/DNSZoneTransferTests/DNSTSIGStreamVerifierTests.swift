import DNSWire
import DNSZoneTransfer
import HTTPDNSCore
import XCTest

/// Multi-message TSIG (RFC 8945 §5.3.1): the independent vector stream, then streams signed by
/// ``StreamSigner`` (a primary's side, written here from the RFC for the tests).
final class DNSTSIGStreamVerifierTests: XCTestCase {
    private let now = TSIGVectors.time

    private func code(_ body: () throws -> Void) -> DNSTSIGError.Code? {
        do {
            try body()
            return nil
        } catch {
            return (error as? DNSTSIGError)?.code
        }
    }

    func testIndependentVectorStreamVerifies() throws {
        var verifier = DNSTSIGStreamVerifier(key: try TSIGVectors.key(), requestMAC: TSIGVectors.queryMAC)
        XCTAssertTrue(try verifier.verify(try DNSReceivedMessage(decoding: TSIGVectors.m1), now: now))
        XCTAssertFalse(try verifier.verify(try DNSReceivedMessage(decoding: TSIGVectors.m2), now: now))
        XCTAssertFalse(verifier.isAtSignedMessage)
        XCTAssertTrue(try verifier.verify(try DNSReceivedMessage(decoding: TSIGVectors.m3), now: now))
        XCTAssertNoThrow(try verifier.finish())
        XCTAssertEqual(code { try verifier.finish() }, .streamFinished)
    }

    func testEndingOnAnUnsignedMessageFails() throws {
        var verifier = DNSTSIGStreamVerifier(key: try TSIGVectors.key(), requestMAC: TSIGVectors.queryMAC)
        try verifier.verify(try DNSReceivedMessage(decoding: TSIGVectors.m1), now: now)
        try verifier.verify(try DNSReceivedMessage(decoding: TSIGVectors.m2), now: now)
        XCTAssertEqual(code { try verifier.finish() }, .missingSignature)
        var empty = DNSTSIGStreamVerifier(key: try TSIGVectors.key(), requestMAC: TSIGVectors.queryMAC)
        XCTAssertEqual(code { try empty.finish() }, .missingSignature)
    }

    func testUnsignedFirstMessageFails() throws {
        var verifier = DNSTSIGStreamVerifier(key: try TSIGVectors.key(), requestMAC: TSIGVectors.queryMAC)
        let m2 = try DNSReceivedMessage(decoding: TSIGVectors.m2)
        XCTAssertEqual(code { try verifier.verify(m2, now: self.now) }, .missingSignature)
        // After a failure the verifier refuses everything.
        let m1 = try DNSReceivedMessage(decoding: TSIGVectors.m1)
        XCTAssertEqual(code { try verifier.verify(m1, now: self.now) }, .streamFinished)
    }

    func testDroppedOrReorderedMessagesFail() throws {
        let key = try TSIGVectors.key()
        let m1 = try DNSReceivedMessage(decoding: TSIGVectors.m1)
        let m2 = try DNSReceivedMessage(decoding: TSIGVectors.m2)
        let m3 = try DNSReceivedMessage(decoding: TSIGVectors.m3)
        for order in [[m1, m3], [m1, m3, m2], [m3], [m2, m1, m3], [m1, m2, m2, m3]] {
            var verifier = DNSTSIGStreamVerifier(key: key, requestMAC: TSIGVectors.queryMAC)
            var failed = false
            for message in order where !failed {
                failed = code { try verifier.verify(message, now: self.now) } != nil
            }
            if !failed { failed = code { try verifier.finish() } != nil }
            XCTAssertTrue(failed, "order of \(order.count) messages accepted")
        }
    }

    func testTamperedUnsignedMessageFailsAtTheNextSignedOne() throws {
        let key = try TSIGVectors.key()
        for index in TSIGVectors.m2.indices {
            var bytes = TSIGVectors.m2
            bytes[index] ^= 0x20
            guard let tampered = try? DNSReceivedMessage(decoding: bytes) else { continue }
            var verifier = DNSTSIGStreamVerifier(key: key, requestMAC: TSIGVectors.queryMAC)
            try verifier.verify(try DNSReceivedMessage(decoding: TSIGVectors.m1), now: now)
            XCTAssertFalse(try verifier.verify(tampered, now: now))
            let m3 = try DNSReceivedMessage(decoding: TSIGVectors.m3)
            XCTAssertEqual(code { try verifier.verify(m3, now: self.now) }, .badSignature, "byte \(index)")
        }
    }

    func testNinetyNineUnsignedInARowAreAllowedAndTheHundredthIsNot() throws {
        let key = try TSIGVectors.key()
        for unsigned in [99, 100] {
            var signer = try StreamSigner(key: key, now: now)
            var messages = [try signer.message(sign: true)]
            for _ in 0..<unsigned { messages.append(try signer.message(sign: false)) }
            messages.append(try signer.message(sign: true))
            var verifier = DNSTSIGStreamVerifier(key: key, requestMAC: signer.requestMAC)
            var failure: DNSTSIGError.Code?
            for message in messages where failure == nil {
                failure = code { try verifier.verify(message, now: self.now) }
            }
            if unsigned == 99 {
                XCTAssertNil(failure)
                XCTAssertNoThrow(try verifier.finish())
            } else {
                XCTAssertEqual(failure, .tooManyUnsigned)
            }
        }
    }

    func testBadTimeInALaterMessageFails() throws {
        let key = try TSIGVectors.key()
        var signer = try StreamSigner(key: key, now: now)
        let first = try signer.message(sign: true)
        signer.now = now + 1000
        let late = try signer.message(sign: true)
        var verifier = DNSTSIGStreamVerifier(key: key, requestMAC: signer.requestMAC)
        try verifier.verify(first, now: now)
        XCTAssertEqual(code { try verifier.verify(late, now: self.now) }, .badTime)
    }
}

/// A primary's side of RFC 8945 §5.3.1 for tests: signs an AXFR query, then response messages,
/// each signed one covering the prior MAC, the unsigned messages since and its own timers.
struct StreamSigner {
    let key: DNSTSIGKey
    var now: UInt64
    let requestMAC: [UInt8]
    private var priorMAC: [UInt8]?
    private var pending: [UInt8] = []
    private var serial = 0

    init(key: DNSTSIGKey, now: UInt64, query: DNSMessage? = nil) throws {
        self.key = key
        self.now = now
        let query = try query ?? DNSMessage.axfrQuery(zone: try DNSName("example.com"), id: 9)
        requestMAC = try DNSTSIG.sign(query, key: key, now: now).mac
    }

    /// The next response message (one A record), signed or not.
    mutating func message(sign: Bool) throws -> DNSReceivedMessage {
        serial += 1
        var message = DNSMessage(id: 9, answers: [
            DNSRecord(name: try DNSName("h\(serial).example.com"), ttl: 60, data: .a([192, 0, 2, UInt8(serial % 256)])),
        ])
        message.isResponse = true
        return try self.sign(message, sign: sign)
    }

    /// `message` as the next message of the stream, signed or not (the first is always signed).
    mutating func sign(_ message: DNSMessage, sign: Bool = true) throws -> DNSReceivedMessage {
        let bytes = try message.encode()
        guard let prior = priorMAC else {
            let signed = try DNSTSIG.sign(bytes, key: key, now: now, requestMAC: requestMAC)
            priorMAC = signed.mac
            return try DNSReceivedMessage(decoding: signed.bytes)
        }
        guard sign else {
            pending += bytes
            return try DNSReceivedMessage(decoding: bytes)
        }
        var record = DNSTSIGRecord(
            keyName: key.name, algorithm: key.algorithm.name, timeSigned: now, fudge: 300, mac: [],
            originalID: message.id
        )
        let input = [UInt8(prior.count >> 8), UInt8(prior.count & 0xFF)] + prior + pending + bytes
            + record.digestVariables(timersOnly: true)
        record.mac = HTTPDNSCrypto.hmacSHA256(key: key.secret, message: input)
        priorMAC = record.mac
        pending = []
        return try DNSReceivedMessage(decoding: try DNSMessage.appending(wireRecord: record.wireRecord, to: bytes))
    }
}
