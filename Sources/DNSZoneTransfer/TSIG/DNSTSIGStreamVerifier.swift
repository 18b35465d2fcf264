import DNSWire

/// Verifies the messages of a TSIG-signed multi-message response, an AXFR or IXFR over TCP
/// (RFC 8945 §5.3.1), one message at a time.
///
/// The first message is verified like a single response (request MAC, message, all TSIG
/// variables). After that a primary may leave up to 99 messages in a row unsigned; the next signed
/// message's MAC covers the prior MAC, every unsigned message since, its own message and only the
/// timer variables. The last message must be signed: call ``finish()`` once the transfer is complete.
/// After any failure the verifier refuses everything, so a caller cannot carry on by mistake.
package struct DNSTSIGStreamVerifier: Sendable {
    /// Most unsigned messages allowed in a row (RFC 8945 §5.3.1: "no more than 99").
    package static let maxUnsignedRun = 99

    private enum State: Sendable {
        case awaitingFirst
        /// `pending` holds the unsigned messages since the last signed one, in order.
        case streaming(priorMAC: [UInt8], pending: [UInt8], unsignedRun: Int)
        case closed
    }

    private let key: DNSTSIGKey
    private let requestMAC: [UInt8]
    private var state: State = .awaitingFirst

    /// - Parameters:
    ///   - key: the key the request was signed with.
    ///   - requestMAC: the MAC of the signed request (``DNSTSIG/Signed/mac``).
    package init(key: DNSTSIGKey, requestMAC: [UInt8]) {
        self.key = key
        self.requestMAC = requestMAC
    }

    /// True when the last message verified was signed, so the stream may end here.
    package var isAtSignedMessage: Bool {
        if case .streaming(_, _, 0) = state { return true }
        return false
    }

    /// Verifies the next message of the stream.
    ///
    /// - Parameter now: seconds since 1970, for the time check of signed messages.
    /// - Returns: true when the message was signed, false for an accepted unsigned one.
    /// - Throws: ``DNSTSIGError``: `.missingSignature` for an unsigned first message,
    ///   `.tooManyUnsigned` for the 100th unsigned one in a row, the codes of
    ///   ``DNSTSIG/verify(_:key:requestMAC:now:)`` for a bad signature, `.streamFinished` after a
    ///   failure or ``finish()``.
    @discardableResult
    package mutating func verify(_ received: DNSReceivedMessage, now: UInt64) throws(DNSTSIGError) -> Bool {
        let current = state
        state = .closed
        switch current {
        case .closed:
            throw DNSTSIGError(.streamFinished, "the stream already failed or finished")
        case .awaitingFirst:
            let record = try DNSTSIG.verify(received, key: key, requestMAC: requestMAC, now: now)
            state = .streaming(priorMAC: record.mac, pending: [], unsignedRun: 0)
            return true
        case .streaming(let priorMAC, var pending, let unsignedRun):
            guard let record = try DNSTSIG.tsigRecord(of: received) else {
                guard unsignedRun < Self.maxUnsignedRun else {
                    throw DNSTSIGError(.tooManyUnsigned, "\(unsignedRun + 1) unsigned messages in a row")
                }
                pending += received.bytes
                state = .streaming(priorMAC: priorMAC, pending: pending, unsignedRun: unsignedRun + 1)
                return false
            }
            var input = DNSTSIG.macField(priorMAC)
            input += pending
            input += received.bytesWithoutLastAdditional(originalID: record.originalID)
            input += record.digestVariables(timersOnly: true)
            try DNSTSIG.check(record, input: input, key: key, now: now)
            state = .streaming(priorMAC: record.mac, pending: [], unsignedRun: 0)
            return true
        }
    }

    /// Ends the stream: the last message verified must have been signed (RFC 8945 §5.3.1).
    ///
    /// - Throws: `.missingSignature` when it was not, or nothing was verified; `.streamFinished`
    ///   after a failure or a previous call.
    package mutating func finish() throws(DNSTSIGError) {
        let signed = isAtSignedMessage
        let current = state
        state = .closed
        switch current {
        case .closed: throw DNSTSIGError(.streamFinished, "the stream already failed or finished")
        case .awaitingFirst: throw DNSTSIGError(.missingSignature, "no message received")
        case .streaming:
            if !signed { throw DNSTSIGError(.missingSignature, "the last message is unsigned") }
        }
    }
}
