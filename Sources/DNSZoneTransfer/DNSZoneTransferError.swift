import DNSWire

/// Why a zone transfer was abandoned; the caller keeps the zone it had.
///
/// Compare by ``code``. ``message`` is the 1-based index of the response message where the problem
/// was found (0 when it is not about one message), ``detail`` context for logs.
package struct DNSZoneTransferError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A stable error code.
    package struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String, Hashable, Sendable {
            case idMismatch
            case notResponse
            case badOpcode
            case truncatedResponse
            case serverError
            case questionMismatch
            case missingSOA
            case wrongClass
            case outOfZone
            case tooLarge
            case trailingRecords
            case unexpectedSOA
            case serialChainBroken
            case serialWentBackwards
            case absentDeletion
            case incomplete
            case alreadyFinished
            case tsig
            case malformed
        }

        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// The message ID is not the query's (RFC 5936 §2.2).
        package static let idMismatch = Code(.idMismatch)
        /// QR is clear: a query arrived where a response belongs.
        package static let notResponse = Code(.notResponse)
        /// OPCODE is not QUERY.
        package static let badOpcode = Code(.badOpcode)
        /// TC is set; transfers run over TCP and are never truncated (RFC 5936 §2.2).
        package static let truncatedResponse = Code(.truncatedResponse)
        /// The primary answered with an RCODE other than NOERROR (see ``DNSZoneTransferError/responseCode``).
        package static let serverError = Code(.serverError)
        /// The question is not the query's, or the first message has none (RFC 5936 §2.2.1).
        package static let questionMismatch = Code(.questionMismatch)
        /// The first record is not the zone's SOA (RFC 5936 §2.2, RFC 1995 §4).
        package static let missingSOA = Code(.missingSOA)
        /// A record is not of class IN.
        package static let wrongClass = Code(.wrongClass)
        /// A record's owner is not in the zone (RFC 5936 §3.1: out-of-zone data is not accepted).
        package static let outOfZone = Code(.outOfZone)
        /// More records or bytes than ``DNSZoneTransfer/Limits`` allow.
        package static let tooLarge = Code(.tooLarge)
        /// Records follow the closing SOA.
        package static let trailingRecords = Code(.trailingRecords)
        /// An SOA where none may be: a closing SOA unlike the opening one.
        package static let unexpectedSOA = Code(.unexpectedSOA)
        /// IXFR difference sequences that do not lead from the current serial to the new one.
        package static let serialChainBroken = Code(.serialChainBroken)
        /// A serial that is not newer than the one before it (RFC 1982 §3.2).
        package static let serialWentBackwards = Code(.serialWentBackwards)
        /// An IXFR deletion of a record the zone does not hold (RFC 1995 §4).
        package static let absentDeletion = Code(.absentDeletion)
        /// The stream ended before the closing SOA.
        package static let incomplete = Code(.incomplete)
        /// A message arrived after the transfer finished or failed.
        package static let alreadyFinished = Code(.alreadyFinished)
        /// TSIG verification failed (see ``DNSZoneTransferError/tsigError``), or the last message was unsigned.
        package static let tsig = Code(.tsig)
        /// A response message does not decode (the I/O layer's finding: the reader takes decoded messages).
        package static let malformed = Code(.malformed)

        package var description: String { base.rawValue }
    }

    package var code: Code
    /// 1-based index of the response message, 0 when not about one message.
    package var message: Int
    package var detail: String
    /// The primary's RCODE for `.serverError`.
    package var responseCode: DNSResponseCode?
    /// The TSIG failure for `.tsig`.
    package var tsigError: DNSTSIGError?

    package init(
        _ code: Code, message: Int = 0, _ detail: String = "", responseCode: DNSResponseCode? = nil,
        tsigError: DNSTSIGError? = nil
    ) {
        self.code = code
        self.message = message
        self.detail = detail
        self.responseCode = responseCode
        self.tsigError = tsigError
    }

    /// For example `outOfZone in message 3: www.example.net.`.
    package var description: String {
        var text = "\(code)"
        if message > 0 { text += " in message \(message)" }
        if !detail.isEmpty { text += ": \(detail)" }
        return text
    }
}
