/// Which address families a lookup asks for.
public enum HTTPDNSAddressFamily: String, Sendable, Hashable, Codable, CaseIterable {
    /// A records only.
    case ipv4
    /// AAAA records only.
    case ipv6
    /// Both A and AAAA.
    case both
    /// What the current network can use, as `getaddrinfo`'s `AI_ADDRCONFIG` decides but without DNS:
    /// the engine asks for the families it finds a route for (both when it finds none), and on an
    /// IPv6-only network with NAT64 (RFC 7050 discovery) it asks for both and synthesizes IPv6
    /// addresses from the IPv4 answers (RFC 6052). A resolver asked directly treats it as `.both`.
    case auto

    /// Whether answers of `family` belong to this lookup.
    public func includes(_ family: HTTPDNSIPAddress.Family) -> Bool {
        switch self {
        case .ipv4: family == .v4
        case .ipv6: family == .v6
        case .both, .auto: true
        }
    }
}
