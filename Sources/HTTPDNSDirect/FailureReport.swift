import Foundation
import HTTPDNSCore
import HTTPDNSTransport

/// One address that failed to connect, as the report endpoint receives it: nothing of the request
/// itself (no path, query, header or body), only where the connection went and how it failed.
package struct FailureReport: Sendable, Hashable {
    /// How the connection failed, in the report's words.
    package typealias ErrorClass = HTTPDNSReportWire.ErrorClass

    /// The host name, normalised (lower case, no trailing dot).
    package var host: String
    package var address: HTTPDNSIPAddress
    package var port: Int
    package var error: ErrorClass
    /// When it failed, in Unix seconds.
    package var time: Int64

    package init(host: String, address: HTTPDNSIPAddress, port: Int, error: ErrorClass, time: Int64) {
        self.host = host
        self.address = address
        self.port = port
        self.error = error
        self.time = time
    }
}

extension HTTPDNSReportWire.ErrorClass {
    /// The class of a failed attempt, or nil for a failure that says nothing about the address
    /// (cancelled, a name not found, a proxy, anything after the request left).
    ///
    /// libcurl (`CURLE_COULDNT_CONNECT`) and the loopback proxy's own connects report a refusal,
    /// an unreachable network and a reset all as `cannotConnectToHost`; the system's text
    /// (`strerror`, which both keep in the detail) tells them apart.
    package init?(_ error: HTTPTransportError) {
        switch error.code {
        case .serverCertificateUntrusted:
            self = .tlsVerification
        case .secureConnectionFailed:
            self = .tlsHandshake
        case .cannotConnectToHost:
            let detail = HTTPDNSASCII.lowercased(error.detail.utf8)
            if detail.contains("unreachable") || detail.contains("no route to host") {
                self = .unreachable
            } else if detail.contains("connection reset") {
                self = .reset
            } else {
                self = .connectRefused
            }
        case .timedOut where error.requestBytesSent == 0:
            self = .connectTimeout
        case .networkConnectionLost where error.requestBytesSent == 0:
            self = .reset
        default:
            return nil
        }
    }
}
