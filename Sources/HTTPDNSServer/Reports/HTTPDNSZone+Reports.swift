import HTTPDNSCore

extension HTTPDNSZone {
    /// Whether the zone answers `host` (normalised) with `address`, following CNAMEs inside the zone
    /// as a query does.
    ///
    /// Reports are counted only for such pairs: the server acts on addresses it hands out itself,
    /// and never probes an address a client merely named (which would make it a port scanner for
    /// anyone holding a report credential).
    package func answers(_ host: String, with address: HTTPDNSIPAddress) -> Bool {
        var current = host
        for _ in 0...Self.maxCNAMEChain {
            guard let match = match(current) else { return false }
            guard let target = match.entry.cname else {
                return (address.family == .v4 ? match.entry.ipv4 : match.entry.ipv6).contains(address)
            }
            current = target
        }
        return false
    }
}
