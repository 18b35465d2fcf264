import HTTPDNSCore

/// One IP network in CIDR form: `10.0.0.0/8`, `2001:db8::/32`, or a bare address (`/32`, `/128`).
///
/// Written strictly, as the service's `HTTPDNSTrustedProxies` reads its blocks: an address the project's parser
/// accepts (no brackets, no zone index), a prefix length in decimal without sign or leading zeros,
/// and no bits set past the prefix (`10.0.0.1/8` is refused rather than silently read as
/// `10.0.0.0/8`, because a list with such a line is usually a list with a typo). An IPv4-mapped IPv6
/// network of /96 or longer (`::ffff:10.0.0.0/104`) is read as the IPv4 network it maps
/// (`10.0.0.0/8`), so that it matches IPv4 clients as a dual-stack socket shows them either way.
package struct HTTPDNSNetwork: Sendable, Hashable, CustomStringConvertible {
    package let family: HTTPDNSIPAddress.Family
    /// The network's bits as two big-endian words (IPv4 in the top 32 bits of `high`).
    package let high: UInt64
    package let low: UInt64
    package let prefixLength: Int

    /// Why a text is not a network.
    package enum Fault: Error, Sendable, Hashable {
        case notAnAddress
        case badPrefixLength(maximum: Int)
        case bitsPastPrefix(Int)

        /// The reason, as the list reader and the views file print it.
        package var reason: String {
            switch self {
            case .notAnAddress: "not an IP address or CIDR network"
            case .badPrefixLength(let maximum): "prefix length must be 0...\(maximum)"
            case .bitsPastPrefix(let length): "address has bits set past /\(length)"
            }
        }
    }

    /// The network of `address` with its first `prefixLength` bits (the rest cleared).
    package init(address: HTTPDNSIPAddress, prefixLength: Int) {
        let address = address.ipv4Mapped ?? address
        let bits = address.family == .v4 ? 32 : 128
        let length = min(max(0, prefixLength), bits)
        let (maskHigh, maskLow) = Self.mask(length)
        let (high, low) = address.words
        self.family = address.family
        self.high = high & maskHigh
        self.low = low & maskLow
        self.prefixLength = length
    }

    /// The IPv6 network of the 16 `bytes` with its first `prefixLength` bits, as is: an IPv4-mapped
    /// prefix stays IPv6 (a MaxMind DB's search tree).
    package init(v6Bytes bytes: [UInt8], prefixLength: Int) {
        var high: UInt64 = 0
        var low: UInt64 = 0
        for index in 0..<8 { high = high << 8 | UInt64(bytes[index]) }
        for index in 8..<16 { low = low << 8 | UInt64(bytes[index]) }
        let length = min(max(0, prefixLength), 128)
        let (maskHigh, maskLow) = Self.mask(length)
        self.family = .v6
        self.high = high & maskHigh
        self.low = low & maskLow
        self.prefixLength = length
    }

    /// Parses `10.0.0.0/8`, `::1/128` or a bare address; nil with the fault otherwise.
    package static func parse(_ text: Substring) -> Result<HTTPDNSNetwork, Fault> {
        let slash = text.firstIndex(of: "/")
        let addressText = text[..<(slash ?? text.endIndex)]
        guard addressText.utf8.count <= 64, addressText.first != "[", let parsed = HTTPDNSIPAddress(String(addressText)) else {
            return .failure(.notAnAddress)
        }
        var family = parsed.family
        let bits = family == .v4 ? 32 : 128
        var length = bits
        if let slash {
            let digits = text[text.index(after: slash)...].utf8
            guard !digits.isEmpty, digits.count <= 3, digits.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
                  digits.count == 1 || digits.first != 0x30
            else { return .failure(.badPrefixLength(maximum: bits)) }
            length = digits.reduce(0) { $0 * 10 + Int($1 - 0x30) }
            guard length <= bits else { return .failure(.badPrefixLength(maximum: bits)) }
        }
        var (high, low) = parsed.words
        let (maskHigh, maskLow) = mask(length)
        guard high & ~maskHigh == 0, low & ~maskLow == 0 else { return .failure(.bitsPastPrefix(length)) }
        if let mapped = parsed.ipv4Mapped, length >= 96 {
            (high, low) = mapped.words
            family = .v4
            length -= 96
        }
        return .success(HTTPDNSNetwork(family: family, high: high, low: low, prefixLength: length))
    }

    private init(family: HTTPDNSIPAddress.Family, high: UInt64, low: UInt64, prefixLength: Int) {
        self.family = family
        self.high = high
        self.low = low
        self.prefixLength = prefixLength
    }

    /// Whether `address` lies in the network (an IPv4-mapped IPv6 address counts as IPv4).
    package func contains(_ address: HTTPDNSIPAddress) -> Bool {
        let address = address.ipv4Mapped ?? address
        guard address.family == family else { return false }
        let (high, low) = address.words
        let (maskHigh, maskLow) = Self.mask(prefixLength)
        return high & maskHigh == self.high && low & maskLow == self.low
    }

    /// The network's first address.
    package var address: HTTPDNSIPAddress { HTTPDNSIPAddress(words: high, low, family: family) }

    package var description: String { "\(address)/\(prefixLength)" }

    /// The netmask of a prefix length, as two words.
    package static func mask(_ length: Int) -> (UInt64, UInt64) {
        let high: UInt64 = length >= 64 ? .max : (length <= 0 ? 0 : .max << UInt64(64 - length))
        let low: UInt64 = length <= 64 ? 0 : (length >= 128 ? .max : .max << UInt64(128 - length))
        return (high, low)
    }
}
