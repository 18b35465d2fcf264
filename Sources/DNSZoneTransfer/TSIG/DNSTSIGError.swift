/// Why a TSIG key could not be read, a message not signed, or a signature not accepted.
///
/// Compare by ``code``; ``detail`` is context for logs. ``tsigErrorCode`` gives the RFC 8945
/// extended RCODE a responder puts in its answer's TSIG record for the failures that have one.
package struct DNSTSIGError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A stable error code.
    package struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String, Hashable, Sendable {
            case invalidKey
            case unsupportedAlgorithm
            case badKey
            case badSignature
            case badTime
            case missingSignature
            case truncatedMAC
            case malformed
            case peerError
            case tooManyUnsigned
            case streamFinished
        }

        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// Key text that is neither `[alg:]name:secret` nor a BIND `key` clause, or an empty secret.
        package static let invalidKey = Code(.invalidKey)
        /// A key for an algorithm other than HMAC-SHA256 (hmac-md5, hmac-sha1, gss-tsig…).
        package static let unsupportedAlgorithm = Code(.unsupportedAlgorithm)
        /// The TSIG record names another key or algorithm (RFC 8945 §5.2.1, BADKEY).
        package static let badKey = Code(.badKey)
        /// The MAC does not match (RFC 8945 §5.2.2, BADSIG).
        package static let badSignature = Code(.badSignature)
        /// Time Signed is further from now than the fudge allows (RFC 8945 §5.2.3, BADTIME).
        package static let badTime = Code(.badTime)
        /// A message that must be signed carries no TSIG record.
        package static let missingSignature = Code(.missingSignature)
        /// A MAC shorter than the full 32 bytes (RFC 8945 §5.2.2.1 allows truncation; this package refuses it).
        package static let truncatedMAC = Code(.truncatedMAC)
        /// The TSIG record is malformed or not the last record of the message (FORMERR).
        package static let malformed = Code(.malformed)
        /// The peer answered with a TSIG error of its own (BADKEY, BADSIG, BADTIME… in the record).
        package static let peerError = Code(.peerError)
        /// More than 99 unsigned messages in a row in a signed stream (RFC 8945 §5.3.1).
        package static let tooManyUnsigned = Code(.tooManyUnsigned)
        /// A stream verifier was used after it failed or finished.
        package static let streamFinished = Code(.streamFinished)

        package var description: String { base.rawValue }
    }

    package var code: Code
    /// Context for people: which key, which field.
    package var detail: String

    package init(_ code: Code, _ detail: String = "") {
        self.code = code
        self.detail = detail
    }

    /// The TSIG error a responder returns for this failure (RFC 8945 §4.2), `nil` for the others.
    package var tsigErrorCode: UInt16? {
        switch code {
        case .badSignature, .truncatedMAC: 16
        case .badKey: 17
        case .badTime: 18
        default: nil
        }
    }

    /// A TSIG error code as RFC 8945 §3 names it (`16 BADSIG`), the number alone for others.
    package static func peerErrorName(_ code: UInt16) -> String {
        let names: [UInt16: String] = [16: "BADSIG", 17: "BADKEY", 18: "BADTIME", 22: "BADTRUNC"]
        return names[code].map { "\(code) \($0)" } ?? "\(code)"
    }

    package var description: String { detail.isEmpty ? "tsig \(code)" : "tsig \(code): \(detail)" }
}
