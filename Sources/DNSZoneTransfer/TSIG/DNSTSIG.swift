import CCrypto
import DNSWire
import HTTPDNSCore

/// Signing and checking single DNS messages with TSIG (RFC 8945), as pure functions.
///
/// The clock is never read here: every call takes `now`, seconds since 1970-01-01 UTC. Checks run
/// in the order of RFC 8945 §5.2 (key, then MAC, then time), so a forged message is reported as
/// BADSIG even when its time is also wrong. For the messages of a zone transfer, see
/// ``DNSTSIGStreamVerifier``.
package enum DNSTSIG {
    /// Fudge this package signs with, in seconds (RFC 8945 §10 recommends 300).
    package static let defaultFudge: UInt16 = 300

    /// A signed message and the MAC it carries, which the response's MAC covers in turn.
    package struct Signed: Sendable, Hashable {
        /// The message with the TSIG record appended, ready to send.
        package var bytes: [UInt8]
        package var mac: [UInt8]
    }

    /// Signs an encoded message: a request (RFC 8945 §4.3), or a response when `requestMAC` is given.
    ///
    /// - Parameters:
    ///   - bytes: the encoded message, without a TSIG record; its ID becomes Original ID.
    ///   - key: the shared key.
    ///   - now: seconds since 1970, written as Time Signed.
    ///   - fudge: the time window the receiver should allow; default ``defaultFudge``.
    ///   - requestMAC: the request's MAC when signing a response (§4.3.1), `nil` for a request.
    /// - Throws: `.malformed` when `bytes` is shorter than a header or the message would overflow.
    package static func sign(
        _ bytes: [UInt8], key: DNSTSIGKey, now: UInt64, fudge: UInt16 = defaultFudge, requestMAC: [UInt8]? = nil
    ) throws(DNSTSIGError) -> Signed {
        guard bytes.count >= 12 else { throw DNSTSIGError(.malformed, "message shorter than a header") }
        var record = DNSTSIGRecord(
            keyName: key.name, algorithm: key.algorithm.name, timeSigned: now & DNSTSIGRecord.maxTime,
            fudge: fudge, mac: [], originalID: UInt16(bytes[0]) << 8 | UInt16(bytes[1])
        )
        var input = requestMAC.map(macField) ?? []
        input += bytes
        input += record.digestVariables()
        record.mac = HTTPDNSCrypto.hmacSHA256(key: key.secret, message: input)
        do {
            return Signed(bytes: try DNSMessage.appending(wireRecord: record.wireRecord, to: bytes), mac: record.mac)
        } catch {
            throw DNSTSIGError(.malformed, "signed message too long")
        }
    }

    /// Encodes `message` and signs it; see ``sign(_:key:now:fudge:requestMAC:)``.
    ///
    /// - Throws: `.malformed` when the message cannot be encoded.
    package static func sign(
        _ message: DNSMessage, key: DNSTSIGKey, now: UInt64, fudge: UInt16 = defaultFudge, requestMAC: [UInt8]? = nil
    ) throws(DNSTSIGError) -> Signed {
        let bytes: [UInt8]
        do { bytes = try message.encode() } catch { throw DNSTSIGError(.malformed, "cannot encode: \(error)") }
        return try sign(bytes, key: key, now: now, fudge: fudge, requestMAC: requestMAC)
    }

    /// Verifies a signed message: a response to a request whose MAC was `requestMAC` (RFC 8945
    /// §5.3), or a request (a NOTIFY at a secondary, §5.2) when `requestMAC` is `nil`.
    ///
    /// - Returns: the TSIG record, whose MAC a reply to a request must cover.
    /// - Throws: `.missingSignature` without a TSIG record; `.malformed` for a misplaced or broken
    ///   one; `.peerError` when a response reports a TSIG error; `.badKey`, `.truncatedMAC`,
    ///   `.badSignature`, `.badTime` as RFC 8945 §5.2 orders them.
    @discardableResult
    package static func verify(
        _ received: DNSReceivedMessage, key: DNSTSIGKey, requestMAC: [UInt8]?, now: UInt64
    ) throws(DNSTSIGError) -> DNSTSIGRecord {
        guard let record = try tsigRecord(of: received) else {
            throw DNSTSIGError(.missingSignature, "no TSIG record")
        }
        var input = requestMAC.map(macField) ?? []
        input += received.bytesWithoutLastAdditional(originalID: record.originalID)
        input += record.digestVariables()
        try check(record, input: input, key: key, now: now)
        return record
    }

    /// The TSIG record of `received`, or `nil`.
    ///
    /// - Throws: `.malformed` when it is not the last record or does not parse.
    static func tsigRecord(of received: DNSReceivedMessage) throws(DNSTSIGError) -> DNSTSIGRecord? {
        do { return try received.tsigRecord() } catch { throw DNSTSIGError(.malformed, "\(error)") }
    }

    /// Key, MAC and time checks on a MAC input built by the caller (RFC 8945 §5.2.1–§5.2.3).
    static func check(_ record: DNSTSIGRecord, input: [UInt8], key: DNSTSIGKey, now: UInt64) throws(DNSTSIGError) {
        guard record.keyName == key.name, record.algorithm == key.algorithm.name else {
            throw DNSTSIGError(.badKey, "message signed with \(record.keyName) (\(record.algorithm)), expected \(key)")
        }
        if record.error != 0 { throw DNSTSIGError(.peerError, "TSIG error \(DNSTSIGError.peerErrorName(record.error)) from the peer") }
        if record.mac.count < key.algorithm.macLength {
            throw DNSTSIGError(.truncatedMAC, "\(record.mac.count)-byte MAC")
        }
        let expected = HTTPDNSCrypto.hmacSHA256(key: key.secret, message: input)
        guard record.mac.count == expected.count, constantTimeEqual(record.mac, expected) else {
            throw DNSTSIGError(.badSignature, "MAC mismatch for key \(key.name)")
        }
        let distance = now > record.timeSigned ? now - record.timeSigned : record.timeSigned - now
        guard distance <= UInt64(record.fudge) else {
            throw DNSTSIGError(.badTime, "signed at \(record.timeSigned), now \(now), fudge \(record.fudge)")
        }
    }

    /// MAC Size then MAC, as a prior MAC enters the next digest (RFC 8945 §4.3.1).
    static func macField(_ mac: [UInt8]) -> [UInt8] {
        [UInt8(truncatingIfNeeded: mac.count >> 8), UInt8(truncatingIfNeeded: mac.count)] + mac
    }

    /// Compares MACs without an early exit (OpenSSL's `CRYPTO_memcmp`), so timing leaks nothing.
    private static func constantTimeEqual(_ lhs: [UInt8], _ rhs: [UInt8]) -> Bool {
        guard lhs.count == rhs.count else { return false }
        return lhs.withUnsafeBytes { left in
            rhs.withUnsafeBytes { right in CRYPTO_memcmp(left.baseAddress, right.baseAddress, lhs.count) == 0 }
        }
    }
}
