/// What connecting showed during a hijack check (rfc-notes "Hijack signals"): a TLS handshake for
/// the real host name at LocalDNS's first address and at HTTPDNS's. A hijacker cannot present a
/// certificate that verifies for the name; a CDN edge that LocalDNS chose can.
public struct HTTPDNSHijackProbe: Sendable, Hashable, Codable {
    /// What one address showed.
    public enum Outcome: String, Sendable, Hashable, Codable {
        /// The certificate verified for the host and the server answered.
        case verified
        /// A certificate was presented but did not verify for the host.
        case notVerified
        /// No TLS session could be made (refused, timed out, not TLS).
        case unreachable
    }

    /// One address's result.
    public struct Result: Sendable, Hashable, Codable {
        /// The address connected to.
        public var address: HTTPDNSIPAddress
        /// What it showed.
        public var result: Outcome
        /// The HTTP status, for ``Outcome/verified``.
        public var status: Int?
        /// Why verification or the connection failed, otherwise.
        public var detail: String?

        package init(address: HTTPDNSIPAddress, result: Outcome, status: Int? = nil, detail: String? = nil) {
            self.address = address
            self.result = result
            self.status = status
            self.detail = detail
        }

        /// One line for people.
        public var text: String {
            switch result {
            case .verified: "certificate verified for the host (HTTP \(status ?? 0))"
            case .notVerified: "certificate did NOT verify for the host: \(detail ?? "")"
            case .unreachable: "no TLS session: \(detail ?? "")"
            }
        }
    }

    /// The port probed (443 for HTTPS sites).
    public var port: Int
    /// LocalDNS's first address, if it gave one.
    public var local: Result?
    /// HTTPDNS's first address, if it gave one.
    public var httpdns: Result?

    package init(port: Int, local: Result?, httpdns: Result?) {
        self.port = port
        self.local = local
        self.httpdns = httpdns
    }

    /// The hijack is confirmed: LocalDNS's address fails verification where HTTPDNS's passes.
    public var confirmsHijack: Bool {
        guard httpdns?.result == .verified, let local else { return false }
        return local.result != .verified
    }

    /// LocalDNS's address is as good as HTTPDNS's: a different edge of the same site.
    public var clearsLocal: Bool { local?.result == .verified }
}
