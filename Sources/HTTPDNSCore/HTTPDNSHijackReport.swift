/// The evidence from one hijack check: what LocalDNS said, what HTTPDNS said, and the verdict.
public struct HTTPDNSHijackReport: Sendable, Hashable, Codable {
    /// The conclusion.
    public enum Verdict: String, Sendable, Hashable, Codable {
        /// Both sides share at least one address.
        case agree
        /// The answers share no address, but LocalDNS gave public addresses (CDNs do this too).
        case disagree
        /// LocalDNS answered with bogon addresses while HTTPDNS gave public ones: hijacked.
        case bogonAnswer
        /// LocalDNS says the name does not exist (or gave nothing) while HTTPDNS has addresses: blocked.
        case localMissing
        /// HTTPDNS could not answer; nothing can be concluded.
        case inconclusive

        /// True for verdicts that indicate hijacking or blocking.
        public var isHijack: Bool { self == .bogonAnswer || self == .localMissing }
    }

    /// One side of the comparison.
    public struct Side: Sendable, Hashable, Codable {
        /// The resolver that answered.
        public var source: String
        /// Its addresses (empty when it failed).
        public var addresses: [HTTPDNSIPAddress]
        /// The TTL it gave, when it answered.
        public var ttl: Int?
        /// The error, when it failed (``HTTPDNSError`` description).
        public var error: String?
        /// The error code, when it failed.
        public var errorCode: String?

        public init(source: String, addresses: [HTTPDNSIPAddress], ttl: Int? = nil, error: String? = nil, errorCode: String? = nil) {
            self.source = source
            self.addresses = addresses
            self.ttl = ttl
            self.error = error
            self.errorCode = errorCode
        }
    }

    public var host: String
    public var local: Side
    public var httpdns: Side
    public var verdict: Verdict
    /// Local addresses that are bogons.
    public var localBogons: [HTTPDNSIPAddress]
    /// A sentence for people.
    public var summary: String

    /// Compares the two sides and decides.
    public init(host: String, local: Side, httpdns: Side) {
        self.host = host
        self.local = local
        self.httpdns = httpdns
        let bogons = local.addresses.filter(\.isBogon)
        self.localBogons = bogons
        let trusted = Set(httpdns.addresses)
        if httpdns.addresses.isEmpty {
            verdict = .inconclusive
            summary = "HTTPDNS gave no answer for \(host); cannot compare"
        } else if local.addresses.isEmpty {
            verdict = .localMissing
            let reason = local.errorCode ?? "no address"
            summary = "LocalDNS gave nothing for \(host) (\(reason)) but HTTPDNS has \(httpdns.addresses.count) address(es): blocked"
        } else if local.addresses.contains(where: trusted.contains) {
            verdict = .agree
            summary = "LocalDNS and HTTPDNS agree for \(host)"
        } else if !bogons.isEmpty, !httpdns.addresses.allSatisfy(\.isBogon) {
            verdict = .bogonAnswer
            let list = bogons.map(\.description).joined(separator: ", ")
            summary = "LocalDNS answered \(host) with bogon address(es) \(list): hijacked"
        } else {
            verdict = .disagree
            summary = "LocalDNS and HTTPDNS share no address for \(host) (may be CDN steering, or hijacking)"
        }
    }
}
