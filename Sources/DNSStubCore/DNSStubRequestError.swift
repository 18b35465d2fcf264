import DNSWire

/// Why the stub does not resolve a received message, and how it reacts: drop it or answer at once
/// with ``responseCode``.
///
/// Compare by ``code``; ``detail`` is context for logs.
package struct DNSStubRequestError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A stable error code.
    package struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String, Hashable, Sendable {
            case tooShort
            case isResponse
            case notQuery
            case malformed
            case badOPT
            case badVersion
            case badQuestionCount
            case badClientSubnet
            case unsupportedType
            case notAllowed
            case rateLimited
        }

        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// Fewer than 12 bytes: not even a header, so no ID to answer with. Dropped.
        package static let tooShort = Code(.tooShort)
        /// QR is set. Dropped: answering responses lets two servers bounce packets forever, and
        /// spoofed responses would turn the stub into a reflector.
        package static let isResponse = Code(.isResponse)
        /// OPCODE is not QUERY (0): NOTIMP (RFC 1035 §4.1.1).
        package static let notQuery = Code(.notQuery)
        /// The message does not decode: FORMERR with the ID and no question (RFC 1035 §4.1.1).
        package static let malformed = Code(.malformed)
        /// More than one OPT record, or one outside the additional section: FORMERR (RFC 6891 §6.1.1).
        package static let badOPT = Code(.badOPT)
        /// An EDNS version other than 0: BADVERS (RFC 6891 §6.1.3).
        package static let badVersion = Code(.badVersion)
        /// QDCOUNT is not 1: FORMERR (RFC 7766 and every server: one question per query).
        package static let badQuestionCount = Code(.badQuestionCount)
        /// A malformed Client Subnet option: FORMERR (RFC 7871 §6).
        package static let badClientSubnet = Code(.badClientSubnet)
        /// A QTYPE the stub does not forward (AXFR, IXFR): REFUSED with EDE 21 Not Supported.
        package static let unsupportedType = Code(.unsupportedType)
        /// The client is not allowed to ask: REFUSED with EDE 18 Prohibited (RFC 8914 §4.19).
        package static let notAllowed = Code(.notAllowed)
        /// The client is over its rate limit (``DNSStubRateLimiter``): dropped or TC=1 over UDP,
        /// REFUSED over TCP.
        package static let rateLimited = Code(.rateLimited)

        package var description: String { base.rawValue }
    }

    package var code: Code
    package var detail: String

    package init(_ code: Code, _ detail: String = "") {
        self.code = code
        self.detail = detail
    }

    /// The RCODE to answer with (BADVERS is the extended 16); nil when the message is dropped.
    package var responseCode: DNSResponseCode? {
        switch code {
        case .tooShort, .isResponse: nil
        case .notQuery: .notImplemented
        case .badVersion: .badVersion
        case .unsupportedType, .notAllowed, .rateLimited: .refused
        default: .formatError
        }
    }

    /// The Extended DNS Error sent with the answer when the client speaks EDNS (RFC 8914).
    package var extendedError: DNSExtendedError? {
        switch code {
        case .unsupportedType: DNSExtendedError(.notSupported, detail)
        case .notAllowed: DNSExtendedError(.prohibited, detail)
        case .rateLimited: DNSExtendedError(.other, "rate limited")
        default: nil
        }
    }

    /// For example `badQuestionCount: 2 questions`.
    package var description: String { detail.isEmpty ? "\(code)" : "\(code): \(detail)" }
}
