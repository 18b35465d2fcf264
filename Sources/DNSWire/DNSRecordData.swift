/// The RDATA of a resource record, decoded for the types the resolver needs.
///
/// Types whose RDATA may hold compressed names (RFC 1035's NS, CNAME, SOA, PTR, MX) are decoded so
/// that the names survive re-encoding in another message; everything else stays as raw bytes in
/// ``opaque(_:_:)`` (RFC 3597), which is also how unknown types round-trip.
package enum DNSRecordData: Sendable, Hashable {
    /// IPv4 address, exactly 4 bytes in network order (RFC 1035 §3.4.1).
    case a([UInt8])
    /// IPv6 address, exactly 16 bytes in network order (RFC 3596 §2.2).
    case aaaa([UInt8])
    /// Canonical name the owner is an alias for.
    case cname(DNSName)
    /// Authoritative name server.
    case ns(DNSName)
    /// Pointer (reverse lookups).
    case ptr(DNSName)
    /// Mail exchange: preference, then host.
    case mx(preference: UInt16, exchange: DNSName)
    /// Character-strings, each at most 255 bytes.
    case txt([[UInt8]])
    /// Start of authority.
    case soa(DNSSOA)
    /// The EDNS(0) pseudo-record; its CLASS and TTL fields are folded into the value (RFC 6891 §6.1).
    case opt(DNSEDNS)
    /// Any other type, as raw RDATA.
    case opaque(DNSRecordType, [UInt8])

    /// The record type this data belongs to.
    package var type: DNSRecordType {
        switch self {
        case .a: .A
        case .aaaa: .AAAA
        case .cname: .CNAME
        case .ns: .NS
        case .ptr: .PTR
        case .mx: .MX
        case .txt: .TXT
        case .soa: .SOA
        case .opt: .OPT
        case .opaque(let type, _): type
        }
    }

    /// The address bytes for A and AAAA data, `nil` for every other type.
    package var addressBytes: [UInt8]? {
        switch self {
        case .a(let bytes), .aaaa(let bytes): bytes
        default: nil
        }
    }
}
