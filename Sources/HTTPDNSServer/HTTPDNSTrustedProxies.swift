import HTTPDNSCore

/// The addresses whose word on the client's address is believed: load balancers sending the PROXY
/// protocol or `X-Forwarded-For`. Empty by default: nobody is trusted, and the client is the peer.
///
/// Written as CIDR blocks, `10.0.0.0/8`, `::1/128`, or single addresses (`192.0.2.10` is `/32`,
/// `2001:db8::1` is `/128`). An IPv4 block also covers the IPv4-mapped IPv6 form of its addresses
/// (`::ffff:10.0.0.1`), which is how a dual-stack socket sees IPv4 peers.
public struct HTTPDNSTrustedProxies: Sendable, Hashable {
    /// One block: the network's 128 bits (IPv4 in the first 32) and its prefix length.
    package struct Block: Sendable, Hashable, CustomStringConvertible {
        package let family: HTTPDNSIPAddress.Family
        let high: UInt64
        let low: UInt64
        package let prefixLength: Int

        /// Parses `10.0.0.0/8`, `::1/128`, or a bare address.
        ///
        /// - Throws: ``HTTPDNSServiceError`` `.invalidConfiguration`: not an address, a prefix length
        ///   out of range (0–32 for IPv4, 0–128 for IPv6), or bits set below the prefix (`10.0.0.1/8`
        ///   is refused rather than silently read as `10.0.0.0/8`).
        package init(_ text: String) throws(HTTPDNSServiceError) {
            let shown = HTTPDNSZone.shown(text)
            let parts = text.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
            guard let address = HTTPDNSIPAddress(String(parts[0])), !parts[0].hasPrefix("[") else {
                throw HTTPDNSServiceError(.invalidConfiguration, "trusted proxy \(shown): not an address or CIDR block")
            }
            let bits = address.family == .v4 ? 32 : 128
            var length = bits
            if parts.count == 2 {
                guard let parsed = Int(parts[1]), (0...bits).contains(parsed), parts[1].allSatisfy(\.isASCII),
                      parts[1].first != "+", parts[1].count == 1 || parts[1].first != "0"
                else {
                    throw HTTPDNSServiceError(.invalidConfiguration, "trusted proxy \(shown): prefix length must be 0...\(bits)")
                }
                length = parsed
            }
            let (high, low) = Self.words(address)
            let (maskHigh, maskLow) = Self.mask(length)
            guard high & ~maskHigh == 0, low & ~maskLow == 0 else {
                throw HTTPDNSServiceError(.invalidConfiguration, "trusted proxy \(shown): address has bits set past /\(length)")
            }
            self.family = address.family
            self.high = high
            self.low = low
            self.prefixLength = length
        }

        /// Whether `address` lies in the block (an IPv4-mapped IPv6 address counts as IPv4).
        package func contains(_ address: HTTPDNSIPAddress) -> Bool {
            let address = address.ipv4Mapped ?? address
            guard address.family == family else { return false }
            let (high, low) = Self.words(address)
            let (maskHigh, maskLow) = Self.mask(prefixLength)
            return high & maskHigh == self.high && low & maskLow == self.low
        }

        package var description: String {
            var bytes: [UInt8] = []
            for shift in stride(from: 56, through: 0, by: -8) { bytes.append(UInt8(truncatingIfNeeded: high >> UInt64(shift))) }
            for shift in stride(from: 56, through: 0, by: -8) { bytes.append(UInt8(truncatingIfNeeded: low >> UInt64(shift))) }
            let address = HTTPDNSIPAddress(bytes: family == .v4 ? Array(bytes[0..<4]) : bytes)
            return "\(address?.description ?? "?")/\(prefixLength)"
        }

        /// The address as two big-endian words, IPv4 in the top 32 bits of the first.
        static func words(_ address: HTTPDNSIPAddress) -> (UInt64, UInt64) {
            var high: UInt64 = 0
            var low: UInt64 = 0
            for (index, byte) in address.bytes.enumerated() {
                if index < 8 { high |= UInt64(byte) << UInt64(56 - 8 * index) } else { low |= UInt64(byte) << UInt64(120 - 8 * index) }
            }
            return (high, low)
        }

        /// The netmask of a prefix length, as the two words.
        static func mask(_ length: Int) -> (UInt64, UInt64) {
            let high: UInt64 = length >= 64 ? .max : (length == 0 ? 0 : .max << UInt64(64 - length))
            let low: UInt64 = length <= 64 ? 0 : (length >= 128 ? .max : .max << UInt64(128 - length))
            return (high, low)
        }
    }

    /// The blocks, in the order given.
    package var blocks: [Block]

    /// Nobody is trusted.
    public init() {
        blocks = []
    }

    /// Parses each of `texts`: an IPv4 or IPv6 address or CIDR block (`10.0.0.0/8`, `::1`); also
    /// accepts comma-separated lists.
    ///
    /// - Throws: ``HTTPDNSServiceError`` `.invalidConfiguration` naming the first bad entry.
    public init(_ texts: [String]) throws(HTTPDNSServiceError) {
        var blocks: [Block] = []
        for text in texts {
            for item in text.split(separator: ",") {
                let trimmed = item.trimmingASCIISpaces
                guard !trimmed.isEmpty else { continue }
                blocks.append(try Block(trimmed))
            }
        }
        self.blocks = blocks
    }

    /// Whether nobody is trusted.
    public var isEmpty: Bool { blocks.isEmpty }

    /// Whether `address` is a trusted proxy.
    public func contains(_ address: HTTPDNSIPAddress) -> Bool {
        blocks.contains { $0.contains(address) }
    }
}

extension Substring {
    /// Without leading and trailing spaces and tabs.
    var trimmingASCIISpaces: String {
        String(drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }.reversed())
    }
}
