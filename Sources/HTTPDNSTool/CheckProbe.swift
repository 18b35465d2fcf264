import Foundation
import HTTPDNSCore
import HTTPDNSTransport

/// Confirms a suspected hijack by connecting (rfc-notes "Hijack signals"): a TLS handshake for the
/// real host name at LocalDNS's address and at HTTPDNS's address. A hijacker cannot present a
/// certificate that verifies for the name; a CDN edge that LocalDNS chose can.
struct CheckProbe: Sendable {
    /// What one side's address showed.
    enum Outcome: Sendable, Equatable {
        /// The certificate verified for the host (and the server answered with this status).
        case verified(status: Int)
        /// A certificate was presented but did not verify for the host.
        case notVerified(String)
        /// No TLS session could be made (refused, timed out, not TLS).
        case unreachable(String)

        var text: String {
            switch self {
            case .verified(let status): "certificate verified for the host (HTTP \(status))"
            case .notVerified(let detail): "certificate did NOT verify for the host: \(detail)"
            case .unreachable(let detail): "no TLS session: \(detail)"
            }
        }

        var jsonValue: String {
            switch self {
            case .verified: "verified"
            case .notVerified: "notVerified"
            case .unreachable: "unreachable"
            }
        }
    }

    /// Both sides' outcomes for one host.
    struct Result: Sendable {
        var port: Int
        var local: (address: HTTPDNSIPAddress, outcome: Outcome)?
        var httpdns: (address: HTTPDNSIPAddress, outcome: Outcome)?

        /// The hijack is confirmed: LocalDNS's address fails verification where HTTPDNS's passes.
        var confirmsHijack: Bool {
            guard case .verified = httpdns?.outcome, let local else { return false }
            if case .verified = local.outcome { return false }
            return true
        }

        /// LocalDNS's address is as good as HTTPDNS's: a different edge of the same site.
        var clearsLocal: Bool {
            if case .verified = local?.outcome { return true }
            return false
        }
    }

    let port: Int
    let transport: HTTPTransport
    let trust: HTTPTransportTrust

    /// Probes the first address of each side of `report`.
    func run(_ report: HTTPDNSHijackReport) async -> Result {
        async let local = probe(report.host, report.local.addresses.first)
        async let httpdns = probe(report.host, report.httpdns.addresses.first)
        return Result(port: port, local: await local, httpdns: await httpdns)
    }

    private func probe(_ host: String, _ address: HTTPDNSIPAddress?) async -> (address: HTTPDNSIPAddress, outcome: Outcome)? {
        guard let address, let url = URL(string: "https://\(host):\(port)/") else { return nil }
        var request = HTTPTransportRequest(url: url, method: "HEAD")
        request.pinnedAddresses = [address]
        request.trust = trust
        request.timeouts = .init(connect: .seconds(3), total: .seconds(5), idle: .seconds(5))
        do {
            let response = try await transport.send(request)
            return (address, .verified(status: response.statusCode))
        } catch {
            switch error.code {
            case .serverCertificateUntrusted, .secureConnectionFailed:
                return (address, .notVerified(error.detail))
            default:
                return (address, .unreachable(error.detail))
            }
        }
    }
}
