import HTTPDNSCore

/// The network a report came from: the reporting client's /24 (IPv4) or /56 (IPv6), the prefixes
/// RFC 7871 §11.1 recommends for client subnets and that one home or one mobile subscriber
/// usually holds whole. Many reports from one network count once: one household cannot stand for
/// many.
///
/// Packed in one word (the prefix bits, then a family tag in the low byte) so that thousands of
/// them per address cost 8 bytes each. An IPv4-mapped IPv6 client counts as its IPv4 address.
package struct HTTPDNSReportNetwork: Sendable, Hashable, CustomStringConvertible {
    /// IPv4 prefix length counted. 24.
    package static let ipv4PrefixLength = 24
    /// IPv6 prefix length counted. 56.
    package static let ipv6PrefixLength = 56

    package let packed: UInt64

    /// The network of `client`.
    package init(client: HTTPDNSIPAddress) {
        let address = client.ipv4Mapped ?? client
        let bytes = address.bytes
        var value: UInt64 = 0
        if address.family == .v4 {
            for byte in bytes.prefix(3) { value = value << 8 | UInt64(byte) }
            packed = value << 8 | 4
        } else {
            for byte in bytes.prefix(7) { value = value << 8 | UInt64(byte) }
            packed = value << 8 | 6
        }
    }

    /// `192.0.2.0/24` or `2001:db8:0:100::/56`.
    package var description: String {
        let prefix = packed >> 8
        if packed & 0xff == 4 {
            let bytes = (0..<3).map { UInt8(truncatingIfNeeded: prefix >> UInt64(16 - 8 * $0)) } + [0]
            return "\(HTTPDNSIPAddress(bytes: bytes)!)/\(Self.ipv4PrefixLength)"
        }
        let bytes = (0..<7).map { UInt8(truncatingIfNeeded: prefix >> UInt64(48 - 8 * $0)) } + [UInt8](repeating: 0, count: 9)
        return "\(HTTPDNSIPAddress(bytes: bytes)!)/\(Self.ipv6PrefixLength)"
    }
}
