import Foundation

/// The certificate authorities trusted for HTTPS: to HTTPDNS providers and to origins alike
/// (``HTTPDNSConfiguration/trust``).
///
/// Peer and host-name verification (`CURLOPT_SSL_VERIFYPEER=1`, `CURLOPT_SSL_VERIFYHOST=2`) are
/// always on; there is deliberately no way to turn them off.
public enum HTTPDNSTrust: Sendable, Hashable {
    /// The system bundle (`/etc/ssl/certs`).
    case system
    /// Only the CA certificates in this PEM file (`CURLOPT_CAINFO`, the system directory is not used).
    case caFile(String)
    /// Only the CA certificates in this PEM data (`CURLOPT_CAINFO_BLOB`, the system bundle is not used).
    case caPEM(Data)
}
