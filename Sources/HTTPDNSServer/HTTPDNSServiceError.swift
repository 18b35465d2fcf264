import Foundation
import HTTPDNSCore

/// The error the HTTPDNS service throws while loading its zone or starting.
///
/// Compare by ``code``; ``detail`` says what was wrong for people (and the CLI), without secrets.
/// Request-time problems never throw: they become HTTP statuses or DNS response codes. The codes,
/// their sentences and the description form are the ones the loopback proxy's error uses too.
public struct HTTPDNSServiceError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A stable error code.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        package let base: HTTPDNSStartFailure
        private init(_ base: HTTPDNSStartFailure) { self.base = base }

        /// The zone file is not valid JSON, or a name, address or TTL in it is wrong.
        public static let invalidZone = Code(.invalidZone)
        /// The configuration cannot work (TLS key without certificate, bad account key, …).
        public static let invalidConfiguration = Code(.invalidConfiguration)
        /// The address could not be bound or the TLS material was rejected.
        public static let cannotListen = Code(.cannotListen)

        public var description: String { base.rawValue }

        /// Every code, for tests that must cover each one.
        package static let allCases: [Code] = HTTPDNSStartFailure.allCases.map(Code.init)
    }

    /// The stable code.
    public var code: Code
    /// A short explanation (for a zone error: which name and what is wrong with it).
    public var detail: String

    package init(_ code: Code, _ detail: String) {
        self.code = code
        self.detail = detail
    }

    public var description: String { code.base.description(detail: detail) }
}

extension HTTPDNSServiceError: LocalizedError {
    /// A short sentence for people (what `localizedDescription` shows): no code, no detail; the
    /// detail is in ``description``.
    public var errorDescription: String? { code.base.sentence(server: "The HTTPDNS service") }
}
