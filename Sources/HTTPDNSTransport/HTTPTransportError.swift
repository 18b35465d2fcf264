import Foundation
import HTTPDNSCore

/// Why a transfer failed.
///
/// Compare by ``code``. The rest is context: libcurl's code and message, the host, the address
/// tried, and whether request bytes had left already (a POST that sent nothing may be retried).
public struct HTTPTransportError: Error, Sendable, CustomStringConvertible {
    /// A stable error code.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String, Hashable, Sendable {
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
            case unknown
        }

        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// The host name could not be resolved.
        public static let cannotFindHost = Code(.cannotFindHost)
        /// No connection could be made (refused, unreachable).
        public static let cannotConnectToHost = Code(.cannotConnectToHost)
        /// A connect, total or idle time limit passed.
        public static let timedOut = Code(.timedOut)
        /// The TLS handshake failed for a reason other than the certificate.
        public static let secureConnectionFailed = Code(.secureConnectionFailed)
        /// The certificate did not verify for the URL host (unknown CA, wrong name, expired).
        public static let serverCertificateUntrusted = Code(.serverCertificateUntrusted)
        /// The caller cancelled the transfer.
        public static let cancelled = Code(.cancelled)
        /// The connection broke while sending or receiving.
        public static let networkConnectionLost = Code(.networkConnectionLost)
        /// The response body or headers went past the allowed size.
        public static let responseTooLarge = Code(.responseTooLarge)
        /// The server's reply was not valid HTTP.
        public static let badServerResponse = Code(.badServerResponse)
        /// The URL is not an `http`/`https` URL libcurl accepts.
        public static let badURL = Code(.badURL)
        /// The method or a header field is malformed (for example a CR/LF in a value).
        public static let invalidRequest = Code(.invalidRequest)
        /// The streaming body source threw.
        public static let bodySourceFailed = Code(.bodySourceFailed)
        /// Anything else; see ``HTTPTransportError/curlCode`` and ``HTTPTransportError/detail``.
        public static let unknown = Code(.unknown)

        public var description: String { base.rawValue }
    }

    /// The stable code.
    public var code: Code
    /// libcurl's `CURLcode` number, when libcurl reported the failure.
    public var curlCode: Int?
    /// libcurl's `CURLOPT_ERRORBUFFER` text or another short explanation.
    public var detail: String
    /// The URL host.
    public var host: String?
    /// The address a connection was attempted to, when known.
    public var attemptedAddress: HTTPDNSIPAddress?
    /// Request bytes (headers and body) written to the network before the failure. When 0 the
    /// server cannot have seen the request, so even a non-idempotent request may be retried.
    public var requestBytesSent: Int64

    public init(
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

    public var description: String {
        var text = "\(code)"
        if let host { text += " for \(host)" }
        if let attemptedAddress { text += " at \(attemptedAddress)" }
        if let curlCode { text += " (curl \(curlCode))" }
        if !detail.isEmpty { text += ": \(detail)" }
        return text
    }

    /// The matching `URLError`, with ``description`` as `NSLocalizedDescriptionKey`.
    public var urlError: URLError {
        let urlCode: URLError.Code
        switch code {
        case .cannotFindHost: urlCode = .cannotFindHost
        case .cannotConnectToHost: urlCode = .cannotConnectToHost
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
        return URLError(urlCode, userInfo: [NSLocalizedDescriptionKey: description])
    }
}
