import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension HTTPDNSClient {
    /// Whether `error` says a server's certificate did not verify for the host, whichever route
    /// the request took.
    ///
    /// `HTTPDNSClient` and the URL protocol report `URLError(.serverCertificateUntrusted)` (or one of
    /// the other certificate codes). Plain `URLSession` on Linux — and so the proxy route, where the
    /// program's own `URLSession` does TLS — reports `URLError(.unknown)`: swift-corelibs-foundation
    /// maps libcurl's `CURLE_PEER_FAILED_VERIFICATION` to its catch-all and keeps libcurl's text as
    /// the description (observed with Swift 6.3 and libcurl 7.88 on OpenSSL, direct and through a
    /// proxy tunnel alike: "SSL certificate problem: self-signed certificate"). That text is
    /// libcurl's fixed wording for a failed verification ("SSL certificate problem: …") or host name
    /// check ("SSL: no alternative certificate subject name matches …", "SSL: certificate subject
    /// name … does not match …").
    public static func isCertificateFailure(_ error: any Error) -> Bool {
        guard let error = error as? URLError else { return false }
        switch error.code {
        case .serverCertificateUntrusted, .serverCertificateHasBadDate, .serverCertificateHasUnknownRoot,
             .serverCertificateNotYetValid:
            return true
        case .unknown:
            let texts = [error.userInfo[NSLocalizedDescriptionKey], (error.userInfo[NSUnderlyingErrorKey] as? NSError)?.localizedDescription]
            return texts.contains { text in
                guard let text = text as? String else { return false }
                return text.hasPrefix("SSL certificate problem:") || text.hasPrefix("SSL: no alternative certificate subject name")
                    || (text.hasPrefix("SSL: certificate subject name") && text.contains("does not match target host"))
            }
        default:
            return false
        }
    }
}
