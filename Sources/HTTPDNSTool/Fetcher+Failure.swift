import Foundation
import HTTPDNSCore
import HTTPDNSTransport
import HTTPDNSNetworking
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension Fetcher {
    /// The one error line for a request the client could not complete, from what the client's
    /// `URLError` carries: the underlying resolution or transport error and the connection report
    /// (every address tried).
    func describe(_ error: URLError, url: URL) -> String {
        let host = Fetcher.bareHost(url)
        if let failure = error.httpdnsUnderlyingError as? HTTPDNSError {
            return "cannot resolve \(host): \(Command.explain(failure))"
        }
        guard let transport = error.httpdnsUnderlyingError as? HTTPTransportError else {
            return error.localizedDescription
        }
        let tried = error.httpdnsConnectionReport?.attempts.compactMap(\.address) ?? []
        let triedText = tried.map(\.description).joined(separator: ", ")
        switch transport.code {
        case .serverCertificateUntrusted:
            let at = transport.attemptedAddress.map { " at \($0)" } ?? ""
            return "certificate for \(host)\(at) did not verify: \(transport.detail)"
        case .cannotConnectToHost, .cannotFindHost:
            let list = tried.isEmpty ? "" : " (tried \(triedText))"
            return "cannot connect to \(host) port \(Fetcher.effectivePort(url))\(list): \(transport.detail)"
        default:
            let list = tried.isEmpty ? "" : " (addresses \(triedText))"
            return "request to \(url.absoluteString) failed\(list): \(transport.code): \(transport.detail)"
        }
    }

    /// The URL host without IPv6 brackets.
    static func bareHost(_ url: URL) -> String {
        let host = url.host ?? "?"
        return host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
    }
}
