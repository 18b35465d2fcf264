#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// An IPv4 or IPv6 address as plain bytes, parsed and printed without touching the network.
///
/// Parsing accepts dotted-quad IPv4 (exactly four decimal parts, no leading zeros beyond one digit)
/// and RFC 4291 IPv6 text without a zone index. Printing is canonical (RFC 5952 for IPv6).
public struct HTTPDNSIPAddress: Hashable, Sendable, CustomStringConvertible, Codable {
    /// The address family.
    public enum Family: String, Sendable, Hashable, Codable {
        case v4
        case v6
    }

    // Stored inline (no heap allocation) so that caches of many addresses stay small and copies are
    // cheap: the 16 bytes in network order, IPv4 in the first 4.
    let high: UInt64
    private let low: UInt64
    private let isV6: Bool

    /// The address in network byte order: 4 bytes for IPv4, 16 for IPv6.
    public var bytes: [UInt8] {
        // One allocation of the final size (IPv4 is the first 4 bytes of `high`).
        var result = [UInt8]()
        result.reserveCapacity(isV6 ? 16 : 4)
        for shift in stride(from: 56, through: isV6 ? 0 : 32, by: -8) { result.append(UInt8(truncatingIfNeeded: high >> UInt64(shift))) }
        guard isV6 else { return result }
        for shift in stride(from: 56, through: 0, by: -8) { result.append(UInt8(truncatingIfNeeded: low >> UInt64(shift))) }
        return result
    }

    /// The family this address belongs to.
    public var family: Family { isV6 ? .v6 : .v4 }

    /// Creates an address from 4 (IPv4) or 16 (IPv6) bytes in network order.
    public init?(bytes: [UInt8]) {
        guard bytes.count == 4 || bytes.count == 16 else { return nil }
        var high: UInt64 = 0
        var low: UInt64 = 0
        for index in 0..<8 {
            let byte = index < bytes.count ? bytes[index] : 0
            high |= UInt64(byte) << UInt64(56 - 8 * index)
        }
        if bytes.count == 16 {
            for index in 0..<8 { low |= UInt64(bytes[8 + index]) << UInt64(56 - 8 * index) }
        }
        self.high = high
        self.low = low
        self.isV6 = bytes.count == 16
    }

    init(high: UInt64, low: UInt64, isV6: Bool) {
        self.high = high
        self.low = low
        self.isV6 = isV6
    }

    /// Parses an address literal; `[::1]` brackets are accepted for IPv6.
    public init?(_ text: String) {
        self.init(utf8: text.utf8)
    }

    /// Parses an address literal given as UTF-8 bytes (a slice of a response body, say).
    init?<Bytes: BidirectionalCollection<UInt8>>(utf8 text: Bytes) {
        var text = text[...]
        var bracketed = false
        if text.first == UInt8(ascii: "["), text.last == UInt8(ascii: "]"), text.count >= 2 {
            text = text.dropFirst().dropLast()
            bracketed = true
        }
        let count = text.count
        guard count > 0, count <= 45 else { return nil }
        let isV6 = text.contains(UInt8(ascii: ":"))
        // Brackets are IPv6's only (RFC 3986 §3.2.2): `[192.0.2.1]` is no literal (found by fuzzing).
        if bracketed, !isV6 { return nil }
        // inet_pton(AF_INET) is strict dotted-quad on glibc; check the characters anyway so that
        // behaviour does not depend on the C library.
        if !isV6, !text.allSatisfy({ $0 == UInt8(ascii: ".") || ($0 >= 0x30 && $0 <= 0x39) }) { return nil }
        // The C string is built on the stack: addresses are parsed for every answer.
        let parsed = withUnsafeTemporaryAllocation(of: CChar.self, capacity: count + 1) { buffer -> (UInt64, UInt64)? in
            var index = 0
            for byte in text {
                // A NUL inside would end the C string early and let junk after it pass.
                guard byte != 0 else { return nil }
                buffer[index] = CChar(bitPattern: byte)
                index += 1
            }
            buffer[count] = 0
            if isV6 {
                var storage = in6_addr()
                guard inet_pton(AF_INET6, buffer.baseAddress!, &storage) == 1 else { return nil }
                return withUnsafeBytes(of: &storage) { raw in
                    (UInt64(bigEndian: raw.loadUnaligned(fromByteOffset: 0, as: UInt64.self)),
                     UInt64(bigEndian: raw.loadUnaligned(fromByteOffset: 8, as: UInt64.self)))
                }
            }
            var storage = in_addr()
            guard inet_pton(AF_INET, buffer.baseAddress!, &storage) == 1 else { return nil }
            return (UInt64(UInt32(bigEndian: storage.s_addr)) << 32, 0)
        }
        guard let parsed else { return nil }
        self.init(high: parsed.0, low: parsed.1, isV6: isV6)
    }

    /// Canonical text: dotted quad, or RFC 5952 IPv6 (lower case, longest zero run compressed).
    public var description: String {
        let bytes = self.bytes
        if bytes.count == 4 {
            return bytes.map(String.init).joined(separator: ".")
        }
        var groups = [UInt16]()
        groups.reserveCapacity(8)
        for index in stride(from: 0, to: 16, by: 2) {
            groups.append(UInt16(bytes[index]) << 8 | UInt16(bytes[index + 1]))
        }
        // IPv4-mapped addresses print with a dotted tail, as inet_ntop does.
        if groups[0..<5].allSatisfy({ $0 == 0 }), groups[5] == 0xffff {
            return "::ffff:" + bytes[12..<16].map(String.init).joined(separator: ".")
        }
        var bestStart = -1
        var bestLength = 0
        var runStart = -1
        for index in 0...8 {
            if index < 8, groups[index] == 0 {
                if runStart < 0 { runStart = index }
            } else if runStart >= 0 {
                let length = index - runStart
                if length > bestLength, length >= 2 {
                    bestStart = runStart
                    bestLength = length
                }
                runStart = -1
            }
        }
        func hex(_ range: Range<Int>) -> String {
            groups[range].map { String($0, radix: 16) }.joined(separator: ":")
        }
        if bestStart < 0 { return hex(0..<8) }
        return hex(0..<bestStart) + "::" + hex((bestStart + bestLength)..<8)
    }

    /// The text used inside URLs and `host:port` strings: IPv6 in brackets.
    package var uriText: String {
        family == .v6 ? "[\(description)]" : description
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let text = try container.decode(String.self)
        guard let address = HTTPDNSIPAddress(text) else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "not an IP address: \(text)")
        }
        self = address
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }
}

extension HTTPDNSIPAddress {
    /// True for 127.0.0.0/8 and ::1.
    public var isLoopback: Bool {
        if !isV6 { return firstByte == 127 }
        return high == 0 && low == 1
    }

    /// True for 0.0.0.0/8 and ::.
    public var isUnspecified: Bool {
        if !isV6 { return firstByte == 0 }
        return high == 0 && low == 0
    }

    /// True for private, shared, link-local, benchmark and reserved space that a public name should
    /// never resolve to (the hijack signals in rfc-notes: 10/8, 172.16/12, 192.168/16, 100.64/10,
    /// 169.254/16, 198.18/15, 240/4, fc00::/7, fe80::/10). Loopback and unspecified are separate.
    // Read from the inline words (no byte array): this runs for every address of every answer.
    public var isPrivateOrReserved: Bool {
        let a = firstByte, b = UInt8(truncatingIfNeeded: high >> 48)
        if !isV6 {
            return a == 10
                || (a == 172 && (16...31).contains(b))
                || (a == 192 && b == 168)
                || (a == 100 && (64...127).contains(b))
                || (a == 169 && b == 254)
                || (a == 198 && (b == 18 || b == 19))
                || a >= 224  // multicast 224/4 and reserved 240/4
        }
        if let mapped = ipv4Mapped { return mapped.isBogon }
        return (a & 0xfe) == 0xfc
            || (a == 0xfe && (b & 0xc0) == 0x80)
            || a == 0xff  // multicast
    }

    /// True when a public name must not resolve here: unspecified, loopback, private or reserved.
    public var isBogon: Bool {
        if let mapped = ipv4Mapped { return mapped.isBogon }
        return isUnspecified || isLoopback || isPrivateOrReserved
    }

    /// The IPv4 address inside an IPv4-mapped IPv6 address (`::ffff:a.b.c.d`).
    @usableFromInline package var ipv4Mapped: HTTPDNSIPAddress? {
        guard isV6, high == 0, low >> 32 == 0xffff else { return nil }
        return HTTPDNSIPAddress(high: (low & 0xffff_ffff) << 32, low: 0, isV6: false)
    }

    /// The address as two big-endian words (IPv4 in the top 32 bits of `high`), read without
    /// allocating: the server's longest-prefix match walks these bits for every request.
    @usableFromInline package var words: (high: UInt64, low: UInt64) { (high, low) }

    /// An address from ``words`` (bits past an IPv4 address's 32 are ignored).
    package init(words high: UInt64, _ low: UInt64, family: Family) {
        self.init(high: family == .v4 ? high & 0xffff_ffff_0000_0000 : high, low: family == .v4 ? 0 : low, isV6: family == .v6)
    }

    /// The first byte in network order.
    private var firstByte: UInt8 { UInt8(truncatingIfNeeded: high >> 56) }

    /// True when `text` is an IP literal (with or without IPv6 brackets); such hosts are never resolved.
    package static func isLiteral(_ text: String) -> Bool {
        HTTPDNSIPAddress(text) != nil
    }
}

extension HTTPDNSIPAddress {
    /// Parses `IP:PORT` or `[IPv6]:PORT` — an IPv6 address must be bracketed, an IPv4 one must not —
    /// the one endpoint syntax of provider specs, `--local-dns` and `--listen`.
    ///
    /// - Parameter allowsPortZero: accept port 0 ("pick a free one", for listening). Default false.
    package static func parseEndpoint(_ text: Substring, allowsPortZero: Bool = false) -> (address: HTTPDNSIPAddress, port: UInt16)? {
        guard let colon = text.lastIndex(of: ":"), let port = UInt16(text[text.index(after: colon)...]),
              port > 0 || allowsPortZero
        else { return nil }
        var host = text[..<colon]
        let bracketed = host.hasPrefix("[") && host.hasSuffix("]")
        if bracketed { host = host.dropFirst().dropLast() }
        guard let address = HTTPDNSIPAddress(String(host)), bracketed == (address.family == .v6) else { return nil }
        return (address, port)
    }
}
