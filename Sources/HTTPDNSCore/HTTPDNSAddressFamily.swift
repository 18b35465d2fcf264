/// Which address families a lookup asks for.
public enum HTTPDNSAddressFamily: String, Sendable, Hashable, Codable, CaseIterable {
    /// A records only.
    case ipv4
    /// AAAA records only.
    case ipv6
    /// Both A and AAAA.
    case both

    /// Whether answers of `family` belong to this lookup.
    public func includes(_ family: HTTPDNSIPAddress.Family) -> Bool {
        switch self {
        case .ipv4: family == .v4
        case .ipv6: family == .v6
        case .both: true
        }
    }
}
