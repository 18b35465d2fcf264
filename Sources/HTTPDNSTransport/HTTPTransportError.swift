import Foundation
import HTTPDNSCore

/// Why a transfer failed.
///
/// Compare by ``code``. The rest is context: libcurl's code and message, the host, the address
/// tried, and whether request bytes had left already (a POST that sent nothing may be retried).
package struct HTTPTransportError: Error, Sendable, CustomStringConvertible {
    /// A stable error code.
    package struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String, Hashable, Sendable, CaseIterable {
            case cannotFindHost
            case cannotConnectToHost
            case timedOut
            case secureConnectionFailed
            case serverCertificateUntrusted
            case cancelled
            case networkConnectionLost
            case responseTooLarge
            case badServerResponse
            case badURL
            case invalidRequest
            case bodySourceFailed
            case proxyConnectionFailed
            case unknown
        }

        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// The host name could not be resolved.
        package static let cannotFindHost = Code(.cannotFindHost)
        /// No connection could be made (refused, unreachable).
        package static let cannotConnectToHost = Code(.cannotConnectToHost)
        /// A connect, total or idle time limit passed.
        package static let timedOut = Code(.timedOut)
        /// The TLS handshake failed for a reason other than the certificate.
        package static let secureConnectionFailed = Code(.secureConnectionFailed)
        /// The certificate did not verify for the URL host (unknown CA, wrong name, expired).
        package static let serverCertificateUntrusted = Code(.serverCertificateUntrusted)
        /// The caller cancelled the transfer.
        package static let cancelled = Code(.cancelled)
        /// The connection broke while sending or receiving.
        package static let networkConnectionLost = Code(.networkConnectionLost)
        /// The response body or headers went past the allowed size.
        package static let responseTooLarge = Code(.responseTooLarge)
        /// The server's reply was not valid HTTP.
        package static let badServerResponse = Code(.badServerResponse)
        /// The URL is not an `http`/`https` URL libcurl accepts.
        package static let badURL = Code(.badURL)
        /// The method or a header field is malformed (for example a CR/LF in a value).
        package static let invalidRequest = Code(.invalidRequest)
        /// The streaming body source threw.
        package static let bodySourceFailed = Code(.bodySourceFailed)
        /// The proxy could not be reached, or refused to connect to the origin (a non-2xx answer to
        /// CONNECT). Apple's CFNetwork reports this as error 310 (`kCFErrorHTTPSProxyConnectionFailure`).
        package static let proxyConnectionFailed = Code(.proxyConnectionFailed)
        /// Anything else; see ``HTTPTransportError/curlCode`` and ``HTTPTransportError/detail``.
        package static let unknown = Code(.unknown)

        package var description: String { base.rawValue }

        /// Every code, for tests that must cover each one (a new code without a sentence fails them).
        package static let allCases: [Code] = Base.allCases.map(Code.init)
    }

    /// The stable code.
    package var code: Code
    /// libcurl's `CURLcode` number, when libcurl reported the failure.
    package var curlCode: Int?
    /// libcurl's `CURLOPT_ERRORBUFFER` text or another short explanation.
    package var detail: String
    /// The URL host.
    package var host: String?
    /// The address a connection was attempted to, when known.
    package var attemptedAddress: HTTPDNSIPAddress?
    /// Request bytes (headers and body) written to the network before the failure. When 0 the
    /// server cannot have seen the request, so even a non-idempotent request may be retried.
    package var requestBytesSent: Int64

    package init(
        _ code: Code,
        _ detail: String,
        curlCode: Int? = nil,
        host: String? = nil,
        attemptedAddress: HTTPDNSIPAddress? = nil,
        requestBytesSent: Int64 = 0
    ) {
        self.code = code
        self.detail = detail
        self.curlCode = curlCode
        self.host = host
        self.attemptedAddress = attemptedAddress
        self.requestBytesSent = requestBytesSent
    }

    package var description: String {
        var text = "\(code)"
        if let host { text += " for \(host)" }
        if let attemptedAddress { text += " at \(attemptedAddress)" }
        if let curlCode { text += " (curl \(curlCode))" }
        if !detail.isEmpty { text += ": \(detail)" }
        return text
    }

    /// A short sentence for people (what an app may show): no codes, no libcurl text.
    package var humanDescription: String {
        let name = host ?? "the server"
        switch code {
        case .cannotFindHost: return "The address of \(name) could not be found."
        case .cannotConnectToHost: return "Could not connect to \(name)."
        case .timedOut: return "The request to \(name) timed out."
        case .secureConnectionFailed: return "A secure connection to \(name) could not be made."
        case .serverCertificateUntrusted: return "The certificate of \(name) is not valid; the connection was refused."
        case .cancelled: return "The request was cancelled."
        case .networkConnectionLost: return "The connection to \(name) was lost."
        case .responseTooLarge: return "The response from \(name) was too large."
        case .badServerResponse: return "The response from \(name) could not be read."
        case .badURL: return "The address of the request is not valid."
        case .invalidRequest: return "The request is not valid."
        case .bodySourceFailed: return "The request body could not be read."
        case .proxyConnectionFailed: return "The proxy could not connect to \(name)."
        default: return "The request to \(name) failed."
        }
    }

    /// The matching `URLError`: ``humanDescription`` as `NSLocalizedDescriptionKey` (what
    /// `localizedDescription` shows), the full ``description`` (codes, libcurl text, address) under
    /// `NSDebugDescription`.
    package var urlError: URLError {
        let urlCode: URLError.Code
        switch code {
        case .cannotFindHost: urlCode = .cannotFindHost
        // CFNetwork's 310 (kCFErrorHTTPSProxyConnectionFailure) is in another domain, and corelibs
        // has no proxy code: its MultiHandle maps a refused proxy (ECONNREFUSED) to cannotConnectToHost
        // and a refused tunnel or unresolvable proxy to unknown. cannotConnectToHost for all of them is
        // what apps following seed 003 already handle (-1004).
        case .cannotConnectToHost, .proxyConnectionFailed: urlCode = .cannotConnectToHost
        case .timedOut: urlCode = .timedOut
        case .secureConnectionFailed: urlCode = .secureConnectionFailed
        case .serverCertificateUntrusted: urlCode = .serverCertificateUntrusted
        case .cancelled: urlCode = .cancelled
        case .networkConnectionLost: urlCode = .networkConnectionLost
        case .responseTooLarge: urlCode = .dataLengthExceedsMaximum
        case .badServerResponse: urlCode = .badServerResponse
        case .badURL, .invalidRequest: urlCode = .badURL
        case .bodySourceFailed: urlCode = .requestBodyStreamExhausted
        default: urlCode = .unknown
        }
        return URLError(urlCode, userInfo: [NSLocalizedDescriptionKey: humanDescription, "NSDebugDescription": description])
    }
}
