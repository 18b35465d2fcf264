/// EDNS Client Subnet (RFC 7871): the network part of a client's address, which a DNS upstream
/// may use to pick addresses near the client.
///
/// Only a prefix is ever sent: the address truncated to ``defaultIPv4PrefixLength`` (/24) or
/// ``defaultIPv6PrefixLength`` (/56), as RFC 7871 §11.1 recommends for privacy. Loopback, private,
/// reserved and unspecified addresses have no subnet worth sending (`init` returns nil).
///
/// The subnet of the request being answered travels to the DNS resolvers as the task-local
/// ``current``: the engine sets it around an upstream lookup of a key that carries one, and the
/// resolvers that speak DNS (plain DNS over UDP/TCP, DoH wire format) add it to their query as an
/// OPT record option. HTTPDNS text formats have no such field and ignore it.
package struct HTTPDNSClientSubnet: Sendable, Hashable, Codable, CustomStringConvertible {
    /// The IPv4 source prefix length sent by default: 24 (RFC 7871 §11.1).
    package static let defaultIPv4PrefixLength = 24
    /// The IPv6 source prefix length sent by default: 56 (RFC 7871 §11.1).
    package static let defaultIPv6PrefixLength = 56
    /// The longest IPv6 source prefix: 56 (RFC 7871 §11.1, "SHOULD truncate IPv6 addresses to no
    /// more than 56 bits"); it also lets a cache key hold a subnet in one word (``packed``).
    package static let maxIPv6PrefixLength = 56
    /// The EDNS option code of Client Subnet (RFC 7871 §6).
    package static let optionCode: UInt16 = 8

    /// The client's address with every bit past ``sourcePrefixLength`` cleared.
    package let address: HTTPDNSIPAddress
    /// How many leading bits of ``address`` are sent.
    package let sourcePrefixLength: Int

    /// The subnet of `client`, or nil when it is not a public address (or a prefix length is out
    /// of range). An IPv4-mapped IPv6 address counts as IPv4.
    package init?(
        client: HTTPDNSIPAddress, ipv4PrefixLength: Int = defaultIPv4PrefixLength,
        ipv6PrefixLength: Int = defaultIPv6PrefixLength
    ) {
        let client = client.ipv4Mapped ?? client
        guard !client.isBogon else { return nil }
        let length = client.family == .v4 ? ipv4PrefixLength : ipv6PrefixLength
        guard (0...(client.family == .v4 ? 32 : Self.maxIPv6PrefixLength)).contains(length) else { return nil }
        var bytes = client.bytes
        for index in bytes.indices {
            let kept = min(8, max(0, length - 8 * index))
            bytes[index] &= kept == 8 ? 0xff : ~(0xff >> UInt8(kept))
        }
        guard let truncated = HTTPDNSIPAddress(bytes: bytes) else { return nil }
        self.address = truncated
        self.sourcePrefixLength = length
    }

    /// The option as it goes in an OPT record's RDATA (RFC 7871 §6): OPTION-CODE 8, OPTION-LENGTH,
    /// FAMILY (1 IPv4, 2 IPv6), SOURCE PREFIX-LENGTH, SCOPE PREFIX-LENGTH 0, then only the address
    /// bytes the prefix covers.
    package var option: [UInt8] {
        let addressBytes = Array(address.bytes.prefix((sourcePrefixLength + 7) / 8))
        let length = 4 + addressBytes.count
        return [0, UInt8(Self.optionCode), UInt8(length >> 8), UInt8(length & 0xff),
                0, address.family == .v4 ? 1 : 2, UInt8(sourcePrefixLength), 0] + addressBytes
    }

    /// Whether an answer's EDNS `options` agree with this subnet (RFC 7871 §7.3): no Client Subnet
    /// option at all (the server ignored it), or one with the same family, source prefix length and
    /// address bits. Anything else (a changed or malformed option) means the answer must be dropped.
    package func agrees(withAnswerOptions options: [UInt8]) -> Bool {
        switch Self.findOption(in: options) {
        case .absent: return true
        case .malformed: return false
        case .found(let data):
            let sent = option
            return data.count == sent.count - 4 && data.prefix(3).elementsEqual(sent[4..<7])
                && data.dropFirst(4).elementsEqual(sent[8...])
        }
    }

    /// What EDNS `options` (code, length, data triples) hold of a Client Subnet option.
    package enum OptionLookup: Equatable {
        /// No Client Subnet option.
        case absent
        /// The list is cut short before one was found.
        case malformed
        /// The first Client Subnet option's data (family, source and scope prefix, address).
        case found(ArraySlice<UInt8>)
    }

    /// Walks EDNS `options` to the first Client Subnet option; the one walk the resolver (checking
    /// answers) and the server (honouring a client's opt-out) share.
    package static func findOption(in options: [UInt8]) -> OptionLookup {
        var index = 0
        while index + 4 <= options.count {
            let code = UInt16(options[index]) << 8 | UInt16(options[index + 1])
            let length = Int(options[index + 2]) << 8 | Int(options[index + 3])
            let data = index + 4
            guard data + length <= options.count else { return .malformed }
            if code == optionCode { return .found(options[data..<data + length]) }
            index = data + length
        }
        return .absent
    }

    /// The subnet in one word, never 0: the address's first 56 bits (IPv4 in the first 32; every bit
    /// past the prefix is clear, so they are all it has), then a byte of 0x80 (present), 0x40 (IPv6)
    /// and the prefix length.
    package var packed: UInt64 {
        address.high | 0x80 | (address.family == .v6 ? 0x40 : 0) | UInt64(sourcePrefixLength)
    }

    /// Whether ``packed`` holds this subnet whole: a prefix the service sends (IPv4 up to /32, IPv6
    /// up to /56) and no address bit set past it. Always true of a subnet `init(client:)` made; a
    /// decoded one (a cache file) may be anything.
    package var isPackable: Bool {
        let length = sourcePrefixLength
        guard (0...(address.family == .v4 ? 32 : Self.maxIPv6PrefixLength)).contains(length) else { return false }
        let mask: UInt64 = length == 0 ? 0 : ~0 << UInt64(64 - length)
        return address.high & ~mask == 0 && HTTPDNSClientSubnet(packed: packed) == self
    }

    /// The subnet ``packed`` holds; nil for 0 (none).
    package init?(packed: UInt64) {
        guard packed & 0x80 != 0 else { return nil }
        address = HTTPDNSIPAddress(high: packed & ~0xff, low: 0, isV6: packed & 0x40 != 0)
        sourcePrefixLength = Int(packed & 0x3f)
    }

    /// `192.0.2.0/24`.
    package var description: String { "\(address)/\(sourcePrefixLength)" }

    /// The subnet of the request being answered, for resolvers that can send it (see the type).
    @TaskLocal package static var current: HTTPDNSClientSubnet?
}
