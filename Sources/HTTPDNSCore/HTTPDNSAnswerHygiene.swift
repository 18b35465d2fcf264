/// Which addresses from an HTTPDNS answer may be used.
///
/// A hijacking or broken service can hand out 0.0.0.0, 127.0.0.1 or private space; by default those
/// are dropped. Loopback and private space can be allowed explicitly (test beds on 127.0.0.0/8).
public struct HTTPDNSAnswerHygiene: Sendable, Hashable {
    /// Accept 127.0.0.0/8 and ::1. Default false.
    public var allowLoopback: Bool = false
    /// Accept private and reserved space (10/8, 172.16/12, 192.168/16, fc00::/7, …). Default false.
    public var allowPrivate: Bool = false

    public init(allowLoopback: Bool = false, allowPrivate: Bool = false) {
        self.allowLoopback = allowLoopback
        self.allowPrivate = allowPrivate
    }

    /// The result of filtering one answer.
    public struct Outcome: Sendable, Hashable {
        /// Usable addresses, deduplicated, in the original order.
        public var kept: [HTTPDNSIPAddress]
        /// Addresses dropped as bogons.
        public var rejected: [HTTPDNSIPAddress]
    }

    /// Whether one address is acceptable.
    public func accepts(_ address: HTTPDNSIPAddress) -> Bool {
        let address = address.ipv4Mapped ?? address
        if address.isUnspecified { return false }
        if address.isLoopback { return allowLoopback }
        if address.isPrivateOrReserved { return allowPrivate }
        return true
    }

    /// Filters `records` to `family`: drops bogons and duplicates, keeps order (IPv4 first for `.both`).
    public func filter(_ records: HTTPDNSRecordSet, family: HTTPDNSAddressFamily) -> Outcome {
        filter(records.addresses(for: family))
    }

    /// Filters a list of addresses: drops bogons and duplicates, keeps order.
    public func filter(_ addresses: [HTTPDNSIPAddress]) -> Outcome {
        var kept: [HTTPDNSIPAddress] = []
        var rejected: [HTTPDNSIPAddress] = []
        // The usual answer holds a few addresses, compared directly; long lists go through a set.
        let short = addresses.count <= 16
        var seen = Set<HTTPDNSIPAddress>()
        for (index, address) in addresses.enumerated() {
            let repeated = short ? addresses[..<index].contains(address) : !seen.insert(address).inserted
            guard !repeated else { continue }
            if accepts(address) { kept.append(address) } else { rejected.append(address) }
        }
        return Outcome(kept: kept, rejected: rejected)
    }
}
