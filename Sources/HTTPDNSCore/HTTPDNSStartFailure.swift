/// Why a server of this package could not start: the codes, their sentences for people and the
/// description form that `HTTPDNSServiceError` (the HTTPDNS service) and `HTTPDNSProxyError` (the
/// loopback proxy) share.
///
/// Each error stays a public struct with its own public codes (compared by code, as every error
/// here); those codes are this vocabulary, so the same failure reads the same from both.
package enum HTTPDNSStartFailure: String, Hashable, Sendable, CaseIterable {
    /// The zone file is not valid (the service only).
    case invalidZone
    /// The configuration cannot work.
    case invalidConfiguration
    /// An address could not be bound, or the TLS material was rejected.
    case cannotListen

    /// A short sentence for people (an error's `errorDescription`): `server` names what could not
    /// start ("The HTTPDNS service", "The proxy"); no code, no detail.
    package func sentence(server: String) -> String {
        switch self {
        case .invalidZone: "\(server) could not start: its zone is not valid."
        case .invalidConfiguration: "\(server) could not start: its settings are not valid."
        case .cannotListen: "\(server) could not listen on its address."
        }
    }

    /// The error's `description` for logs and the CLI: the code, then what was wrong.
    package func description(detail: String) -> String { "\(rawValue): \(detail)" }
}
