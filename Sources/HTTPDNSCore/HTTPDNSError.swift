import Foundation

/// The error every part of the resolution engine throws.
///
/// Compare errors by ``code``; the other fields are context for people. An error that collects
/// several attempts (a provider chain, failover) lists each in ``attempts``.
public struct HTTPDNSError: Error, Sendable, CustomStringConvertible {
    /// A stable error code.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String, Hashable, Sendable, CaseIterable {
            case malformedAnswer
            case noAddress
            case nameNotFound
            case httpStatus
            case timedOut
            case transport
            case bogonAnswer
            case allAttemptsFailed
            case invalidConfiguration
            case invalidHost
            case cancelled
            case unauthorized
            case unsupported
        }

        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// The answer could not be parsed (garbage, wrong content type, truncated).
        public static let malformedAnswer = Code(.malformedAnswer)
        /// The service answered but gave no address for the name (empty body, `0`, NODATA).
        public static let noAddress = Code(.noAddress)
        /// The name does not exist (NXDOMAIN).
        public static let nameNotFound = Code(.nameNotFound)
        /// The service answered with an HTTP status other than 2xx.
        public static let httpStatus = Code(.httpStatus)
        /// No answer within the time allowed.
        public static let timedOut = Code(.timedOut)
        /// The request did not reach the service or the connection failed.
        public static let transport = Code(.transport)
        /// Every address in the answer was a bogon (private, loopback, unspecified) and was dropped.
        public static let bogonAnswer = Code(.bogonAnswer)
        /// Every provider and fallback failed; see ``HTTPDNSError/attempts``.
        public static let allAttemptsFailed = Code(.allAttemptsFailed)
        /// The configuration cannot work (bad URL, missing credential).
        public static let invalidConfiguration = Code(.invalidConfiguration)
        /// The host name is not a valid DNS name.
        public static let invalidHost = Code(.invalidHost)
        /// The lookup was cancelled.
        public static let cancelled = Code(.cancelled)
        /// The service refused the credentials or signature (HTTP 401/403); cached entries are dropped.
        public static let unauthorized = Code(.unauthorized)
        /// The request asks for something this provider cannot do.
        public static let unsupported = Code(.unsupported)

        public var description: String { base.rawValue }

        /// Every code, for tests that must cover each one (a new code without a sentence fails them).
        package static let allCases: [Code] = Base.allCases.map(Code.init)

        /// The sentence for people about the name being resolved, when known: a capital first, a full
        /// stop last, no code and no detail.
        // Exhaustive on purpose: a new code does not build until it has a sentence of its own.
        fileprivate func sentence(host: String?) -> String {
            let quoted = host.map { " “\($0)”" } ?? ""
            switch base {
            case .nameNotFound: return "The name\(quoted) does not exist."
            case .noAddress, .bogonAnswer: return "No usable address was found for the name\(quoted)."
            case .timedOut: return "Looking up the name\(quoted) took too long."
            case .cancelled: return "The lookup was cancelled."
            case .invalidHost: return "The host name\(quoted) is not valid."
            case .invalidConfiguration: return "The HTTPDNS settings are not valid."
            case .unauthorized: return "The HTTPDNS service refused the credentials."
            case .unsupported: return "The HTTPDNS service cannot answer this request."
            case .malformedAnswer, .httpStatus, .transport, .allAttemptsFailed: return "The name\(quoted) could not be resolved."
            }
        }
    }

    /// One failed attempt inside a chain.
    public struct Attempt: Sendable, CustomStringConvertible {
        /// Which provider or address was tried (for example `dnspod http://127.0.0.1:8053/d`).
        public var source: String
        /// Why it failed.
        public var error: HTTPDNSError

        package init(source: String, error: HTTPDNSError) {
            self.source = source
            self.error = error
        }

        public var description: String { "\(source): \(error)" }
    }

    /// The stable code.
    public var code: Code
    /// A short explanation, without secrets.
    public var detail: String
    /// The name being resolved, when there was one.
    public var host: String?
    /// The provider or address that failed, when known.
    public var source: String?
    /// For ``Code/allAttemptsFailed``: every attempt, in order.
    public var attempts: [Attempt]

    public init(_ code: Code, _ detail: String, host: String? = nil, source: String? = nil, attempts: [Attempt] = []) {
        self.code = code
        self.detail = detail
        self.host = host
        self.source = source
        self.attempts = attempts
    }

    public var description: String {
        var text = "\(code)"
        if let host { text += " for \(host)" }
        if let source { text += " from \(source)" }
        text += ": \(detail)"
        if !attempts.isEmpty {
            text += " [" + attempts.map(\.description).joined(separator: "; ") + "]"
        }
        return text
    }
}

extension HTTPDNSError: LocalizedError, CustomDebugStringConvertible {
    /// A short sentence for people (what `localizedDescription` shows and an app may put in its UI):
    /// no codes, no provider or transport text. The detail is in ``debugDescription``.
    public var errorDescription: String? {
        code.sentence(host: host)
    }

    /// Everything known, for logs and bug reports: code, host, source, detail and every attempt.
    public var debugDescription: String { description }
}

extension HTTPDNSError {
    package static func malformed(_ detail: String, source: String? = nil) -> HTTPDNSError {
        HTTPDNSError(.malformedAnswer, detail, source: source)
    }
}
