/// A NAT64 prefix (RFC 6052) as a plain value: finding it in the answer to `ipv4only.arpa` (RFC 7050)
/// and embedding IPv4 addresses in it.
///
/// On an IPv6-only network a NAT64 translator reaches IPv4 hosts at IPv6 addresses made of the
/// network's prefix and the IPv4 address. Resolvers with DNS64 synthesize those for names that
/// only have A records; an HTTPDNS answer (IPv4 from a provider) has to be synthesized by the client
/// itself, which is what ``synthesize(_:)`` does.
package struct HTTPDNSNAT64Prefix: Sendable, Hashable, CustomStringConvertible {
    /// The prefix lengths RFC 6052 section 2.2 allows.
    package static let lengths = [32, 40, 48, 56, 64, 96]

    /// The name whose AAAA records reveal the prefix (RFC 7050 section 2).
    package static let discoveryName = "ipv4only.arpa"

    /// The well-known IPv4 addresses of `ipv4only.arpa` (RFC 7050 section 2.2): 192.0.0.170 and 192.0.0.171.
    package static let wellKnownIPv4: [HTTPDNSIPAddress] = [HTTPDNSIPAddress(bytes: [192, 0, 0, 170])!, HTTPDNSIPAddress(bytes: [192, 0, 0, 171])!]

    /// The Well-Known Prefix 64:ff9b::/96 (RFC 6052 section 2.1).
    package static let wellKnown = HTTPDNSNAT64Prefix(HTTPDNSIPAddress(bytes: [0, 0x64, 0xff, 0x9b] + [UInt8](repeating: 0, count: 12))!, length: 96)!

    /// The prefix bits (the rest zero), as an IPv6 address.
    package let address: HTTPDNSIPAddress
    /// The prefix length: 32, 40, 48, 56, 64 or 96.
    package let length: Int

    /// A prefix of `length` bits from `address` (the bits past the prefix are cleared); nil unless
    /// `address` is IPv6 and `length` is 32, 40, 48, 56, 64 or 96 (RFC 6052 section 2.2).
    package init?(_ address: HTTPDNSIPAddress, length: Int) {
        guard address.family == .v6, HTTPDNSNAT64Prefix.lengths.contains(length) else { return nil }
        var bytes = address.bytes
        for index in (length / 8)..<16 { bytes[index] = 0 }
        self.address = HTTPDNSIPAddress(bytes: bytes)!
        self.length = length
    }

    /// `prefix/length`, as in `64:ff9b::/96`.
    package var description: String { "\(address)/\(length)" }

    /// The byte positions of the 4 IPv4 bytes for a prefix length (RFC 6052 figure 1): the embedded
    /// address skips byte 8, the "u" octet, which must be zero.
    static func ipv4Positions(length: Int) -> [Int] {
        let start = length / 8
        return (start..<16).filter { $0 != 8 }.prefix(4).map { $0 }
    }

    /// The IPv6 address a NAT64 with this prefix uses for `ipv4` (RFC 6052 section 2.2); IPv6
    /// addresses come back unchanged.
    ///
    /// The suffix and the u octet are zero. Non-global IPv4 addresses are not synthesized with the
    /// Well-Known Prefix (RFC 6052 section 3.1): they come back unchanged too.
    package func synthesize(_ ipv4: HTTPDNSIPAddress) -> HTTPDNSIPAddress {
        guard ipv4.family == .v4 else { return ipv4 }
        if self == HTTPDNSNAT64Prefix.wellKnown, ipv4.isBogon { return ipv4 }
        var bytes = address.bytes
        for (byte, position) in zip(ipv4.bytes, HTTPDNSNAT64Prefix.ipv4Positions(length: length)) {
            bytes[position] = byte
        }
        return HTTPDNSIPAddress(bytes: bytes)!
    }

    /// The IPv4 address embedded in `ipv6` if it lies in this prefix, with a zero u octet; else nil.
    package func extract(_ ipv6: HTTPDNSIPAddress) -> HTTPDNSIPAddress? {
        guard ipv6.family == .v6 else { return nil }
        let bytes = ipv6.bytes
        let prefixBytes = address.bytes
        guard bytes[..<(length / 8)] == prefixBytes[..<(length / 8)], length == 96 || bytes[8] == 0 else { return nil }
        return HTTPDNSIPAddress(bytes: HTTPDNSNAT64Prefix.ipv4Positions(length: length).map { bytes[$0] })
    }

    /// The prefixes revealed by the AAAA records of `ipv4only.arpa` (RFC 7050 section 3): each
    /// address is searched for a well-known IPv4 address at every position RFC 6052 allows, the
    /// longest prefix first; addresses that hold none are ignored (a resolver without DNS64, or one
    /// that lies). Distinct prefixes, in answer order; empty means no NAT64 here.
    package static func discover(from answers: [HTTPDNSIPAddress]) -> [HTTPDNSNAT64Prefix] {
        var found: [HTTPDNSNAT64Prefix] = []
        for answer in answers where answer.family == .v6 {
            for length in lengths.reversed() {
                guard let prefix = HTTPDNSNAT64Prefix(answer, length: length),
                      let embedded = prefix.extract(answer), wellKnownIPv4.contains(embedded),
                      // The suffix past the embedded address is zero (RFC 6052 section 2.2).
                      prefix.synthesize(embedded) == answer
                else { continue }
                if !found.contains(prefix) { found.append(prefix) }
                break
            }
        }
        return found
    }
}
