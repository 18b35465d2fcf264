/// The error the HTTPDNS service throws while loading its zone or starting.
///
/// Compare by ``code``; ``detail`` says what was wrong for people (and the CLI), without secrets.
/// Request-time problems never throw: they become HTTP statuses or DNS response codes.
public struct HTTPDNSServiceError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A stable error code.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String, Hashable, Sendable {
            case invalidZone
            case invalidConfiguration
            case cannotListen
        }

        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// The zone file is not valid JSON, or a name, address or TTL in it is wrong.
        public static let invalidZone = Code(.invalidZone)
        /// The configuration cannot work (TLS key without certificate, bad account key, …).
        public static let invalidConfiguration = Code(.invalidConfiguration)
        /// The address could not be bound or the TLS material was rejected.
        public static let cannotListen = Code(.cannotListen)

        public var description: String { base.rawValue }
    }

    /// The stable code.
    public var code: Code
    /// A short explanation (for a zone error: which name and what is wrong with it).
    public var detail: String

    package init(_ code: Code, _ detail: String) {
        self.code = code
        self.detail = detail
    }

    public var description: String { "\(code): \(detail)" }
}
