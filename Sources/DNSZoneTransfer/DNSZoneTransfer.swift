import DNSWire

/// The reading side of a zone transfer, AXFR (RFC 5936) or IXFR (RFC 1995), as a value.
///
/// The I/O layer sends ``query`` (signed if a key is configured), then hands every response message
/// to ``receive(_:wireSize:signature:)`` in order and acts on what it returns: read another
/// message, install the result, or close the connection and keep the old zone. Nothing here reads
/// a socket or a clock. Every message is checked (ID, QR, opcode, RCODE, TC, question echo) and
/// every record (class IN, owner inside the zone); the totals are capped by ``Limits``.
///
/// IXFR responses take three forms (RFC 1995 §4), told apart by their first records: one SOA that is
/// not newer than the current one (up to date); SOA, then a non-SOA record (the whole zone, as
/// AXFR); SOA, then the current SOA (difference sequences, applied to the current zone).
package struct DNSZoneTransfer: Sendable {
    /// Caps on what one transfer may deliver; an oversized one fails with `.tooLarge`.
    package struct Limits: Sendable, Hashable {
        /// Most answer records over all messages, SOAs included. Default 1,000,000.
        package var maxRecords: Int = 1_000_000
        /// Most bytes over all messages (their wire sizes). Default 256 MiB.
        package var maxBytes: Int = 256 << 20

        package init(maxRecords: Int = 1_000_000, maxBytes: Int = 256 << 20) {
            self.maxRecords = maxRecords
            self.maxBytes = maxBytes
        }
    }

    /// What a finished transfer delivers.
    package enum Result: Sendable, Hashable {
        /// IXFR: the primary's serial is not newer than ours; keep the zone.
        case upToDate(DNSSOA)
        /// The whole zone (AXFR, or IXFR answered in AXFR form).
        case full(DNSZoneSnapshot)
        /// The current zone with IXFR's difference sequences applied.
        case incremental(DNSZoneSnapshot)
    }

    /// What the caller does next.
    package enum Action: Sendable, Hashable {
        /// Read the next message.
        case needMore
        /// The transfer is complete; close the connection and use the result.
        case done(Result)
        /// The transfer failed; close the connection and keep the old zone.
        case failed(DNSZoneTransferError)
    }

    /// The TSIG outcome of a message, from ``DNSTSIGStreamVerifier``.
    package enum Signature: Sendable, Hashable {
        /// No key is configured for this zone.
        case none
        /// The message carried a valid TSIG.
        case signed
        /// The message was an accepted unsigned one inside a signed stream; it may not be the last.
        case unsigned
        /// Verification failed; the transfer fails with `.tsig`.
        case rejected(DNSTSIGError)
    }

    /// The opening SOA: the new version of the zone.
    struct Opening: Sendable {
        let record: DNSRecord
        let soa: DNSSOA
    }

    enum State: Sendable {
        /// Waiting for the opening SOA.
        case start
        /// IXFR after a newer opening SOA: the next record tells the form.
        case ixfrForm(opening: Opening)
        /// Collecting a whole zone until the SOA equal to `opening`.
        case full(opening: Opening)
        /// IXFR: deleting records of the sequence that starts at serial `from`.
        case deleting(opening: Opening, from: DNSSerial)
        /// IXFR: adding records of the sequence that ends at serial `to`.
        case adding(opening: Opening, to: DNSSerial)
        case finished
    }

    /// The zone being transferred.
    package let zone: DNSName
    /// The query to send; its ID and question are what responses must echo.
    package let query: DNSMessage
    package let limits: Limits
    /// The zone an IXFR starts from; `nil` for AXFR.
    let current: DNSZoneSnapshot?
    var state: State = .start
    var records = DNSZoneRecordSet()
    var messageCount = 0
    var recordCount = 0
    var byteCount = 0

    /// A full transfer of `zone`.
    ///
    /// - Parameters:
    ///   - id: the query ID, from a CSPRNG (RFC 5452).
    ///   - limits: caps on the transfer's size; default ``Limits/init(maxRecords:maxBytes:)``.
    package init(axfr zone: DNSName, id: UInt16, limits: Limits = Limits()) {
        self.zone = zone
        self.query = DNSMessage.axfrQuery(zone: zone, id: id)
        self.limits = limits
        self.current = nil
    }

    /// An incremental transfer of `current.zone` from `current`'s serial (RFC 1995 §3).
    package init(ixfr current: DNSZoneSnapshot, id: UInt16, limits: Limits = Limits()) {
        self.zone = current.zone
        self.query = DNSMessage.ixfrQuery(zone: current.zone, id: id, current: current.soa, ttl: current.soaTTL)
        self.limits = limits
        self.current = current
    }

    /// Takes the next response message.
    ///
    /// - Parameters:
    ///   - message: the decoded message.
    ///   - wireSize: its size on the wire in bytes, counted against ``Limits/maxBytes``.
    ///   - signature: its TSIG outcome; ``Signature/none`` without a key.
    /// - Returns: ``Action/needMore`` until the closing SOA, then ``Action/done(_:)`` once, or
    ///   ``Action/failed(_:)`` as soon as a rule is broken; after either, `.failed(.alreadyFinished)`.
    package mutating func receive(_ message: DNSMessage, wireSize: Int, signature: Signature) -> Action {
        if case .finished = state {
            return .failed(DNSZoneTransferError(.alreadyFinished, message: messageCount + 1))
        }
        messageCount += 1
        do throws(DNSZoneTransferError) {
            // The header first: a primary refusing us (NOTAUTH, REFUSED) answers unsigned, and its
            // RCODE says more than the missing TSIG does. Either way the transfer fails.
            try checkHeader(message, signature: signature)
            if case .rejected(let error) = signature {
                throw DNSZoneTransferError(.tsig, message: messageCount, "\(error)", tsigError: error)
            }
            try count(message, wireSize: wireSize)
            let answers = message.answers
            // RFC 5936 §2.2: the first message begins with the SOA; an empty one cannot.
            if messageCount == 1, answers.isEmpty {
                throw DNSZoneTransferError(.missingSOA, message: messageCount, "no answer records")
            }
            for (position, record) in answers.enumerated() {
                try checkRecord(record)
                if let result = try take(record) {
                    guard position == answers.count - 1 else {
                        throw DNSZoneTransferError(.trailingRecords, message: messageCount, "\(answers.count - 1 - position) after the closing SOA")
                    }
                    if signature == .unsigned {
                        let error = DNSTSIGError(.missingSignature, "the last message is unsigned")
                        throw DNSZoneTransferError(.tsig, message: messageCount, "\(error)", tsigError: error)
                    }
                    state = .finished
                    return .done(result)
                }
            }
            return .needMore
        } catch {
            state = .finished
            return .failed(error)
        }
    }

    /// The connection closed (or the caller gave up) before ``receive(_:wireSize:signature:)`` said done.
    ///
    /// - Returns: `.failed(.incomplete)`, or `.failed(.alreadyFinished)` after the end.
    package mutating func streamEnded() -> Action {
        if case .finished = state { return .failed(DNSZoneTransferError(.alreadyFinished)) }
        state = .finished
        return .failed(DNSZoneTransferError(.incomplete, "the stream ended after \(messageCount) messages"))
    }
}
