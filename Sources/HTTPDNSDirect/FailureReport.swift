import Foundation
@_spi(HTTPDNSPackage) import HTTPDNSCore
import HTTPDNSTransport

/// One address that failed to connect, as the report endpoint receives it: nothing of the request
/// itself (no path, query, header or body), only where the connection went and how it failed.
package typealias FailureReport = HTTPDNSReportWire.Item

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
