/// The addresses one provider gave for one name, before the engine's hygiene and cache.
public struct HTTPDNSRecordSet: Sendable, Hashable {
    /// The name that was asked for, lower-cased, without a trailing dot.
    public var host: String
    /// IPv4 addresses in the order the provider gave them.
    public var ipv4: [HTTPDNSIPAddress]
    /// IPv6 addresses in the order the provider gave them.
    public var ipv6: [HTTPDNSIPAddress]
    /// Time to live in seconds; `nil` when the provider did not say.
    public var ttl: Int?
    /// The client address the provider saw, when it reports one (DNSPod `|clientip`, Alibaba `client_ip`).
    public var clientIP: String?

    public init(host: String, ipv4: [HTTPDNSIPAddress] = [], ipv6: [HTTPDNSIPAddress] = [], ttl: Int? = nil, clientIP: String? = nil) {
        self.host = host
        self.ipv4 = ipv4
        self.ipv6 = ipv6
        self.ttl = ttl
        self.clientIP = clientIP
    }

    /// IPv4 then IPv6 addresses, filtered to `family`.
    package func addresses(for family: HTTPDNSAddressFamily) -> [HTTPDNSIPAddress] {
        switch family {
        case .ipv4: ipv4
        case .ipv6: ipv6
        case .both, .auto: ipv4 + ipv6
        }
    }

    /// True when the set holds no address at all.
    package var isEmpty: Bool { ipv4.isEmpty && ipv6.isEmpty }
}
