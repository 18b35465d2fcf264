/// Which addresses from an HTTPDNS answer may be used.
///
/// A hijacking or broken service can hand out 0.0.0.0, 127.0.0.1 or private space; by default those
/// are dropped. They can be allowed explicitly, for an intranet or a test bed on 127.0.0.0/8: one
/// switch, meaning what the command line's `--allow-private` means.
public struct HTTPDNSAnswerHygiene: Sendable, Hashable {
    /// Accept loopback (127.0.0.0/8, ::1), private and reserved space (10/8, 172.16/12, 192.168/16,
    /// fc00::/7, …). Unspecified addresses (0.0.0.0, ::) are never accepted. Default false.
    ///
    /// With private answers allowed, a hijack check loses its bogon test, so ``HTTPDNSEngine``
    /// counts any disagreement with HTTPDNS as hijacking (see ``HTTPDNSHijackReport``).
    public var allowPrivate: Bool = false

    /// - Parameter allowPrivate: accept loopback, private and reserved addresses. Default false.
    public init(allowPrivate: Bool = false) {
        self.allowPrivate = allowPrivate
    }

    /// The result of filtering one answer.
    package struct Outcome: Sendable, Hashable {
        /// Usable addresses, deduplicated, in the original order.
        package var kept: [HTTPDNSIPAddress]
        /// Addresses dropped as bogons.
        package var rejected: [HTTPDNSIPAddress]
    }

    /// Whether one address is acceptable.
    public func accepts(_ address: HTTPDNSIPAddress) -> Bool {
        let address = address.ipv4Mapped ?? address
        if address.isUnspecified { return false }
        if address.isLoopback || address.isPrivateOrReserved { return allowPrivate }
        return true
    }

    /// Filters `records` to `family`: drops bogons and duplicates, keeps order (IPv4 first for `.both`).
    package func filter(_ records: HTTPDNSRecordSet, family: HTTPDNSAddressFamily) -> Outcome {
        filter(records.addresses(for: family))
    }

    /// Filters a list of addresses: drops bogons and duplicates, keeps order.
    package func filter(_ addresses: [HTTPDNSIPAddress]) -> Outcome {
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
