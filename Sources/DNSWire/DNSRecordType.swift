/// A resource record TYPE (RFC 1035 §3.2.2 and later registrations); any 16-bit value is allowed.
public struct DNSRecordType: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    public var rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }
    public init(_ rawValue: UInt16) { self.rawValue = rawValue }

    /// IPv4 host address (RFC 1035).
    public static let A = DNSRecordType(1)
    /// Authoritative name server (RFC 1035).
    public static let NS = DNSRecordType(2)
    /// Canonical name (RFC 1035).
    public static let CNAME = DNSRecordType(5)
    /// Start of a zone of authority; its MINIMUM drives negative caching (RFC 2308).
    public static let SOA = DNSRecordType(6)
    /// Domain name pointer (RFC 1035).
    public static let PTR = DNSRecordType(12)
    /// Mail exchange (RFC 1035).
    public static let MX = DNSRecordType(15)
    /// Text strings (RFC 1035).
    public static let TXT = DNSRecordType(16)
    /// IPv6 host address (RFC 3596).
    public static let AAAA = DNSRecordType(28)
    /// Service location (RFC 2782).
    public static let SRV = DNSRecordType(33)
    /// EDNS(0) pseudo-record (RFC 6891).
    public static let OPT = DNSRecordType(41)
    /// Service binding (RFC 9460).
    public static let SVCB = DNSRecordType(64)
    /// HTTPS service binding (RFC 9460).
    public static let HTTPS = DNSRecordType(65)
    /// Any type, in questions only (RFC 1035 QTYPE `*`).
    public static let ANY = DNSRecordType(255)

    private static let names: [UInt16: String] = [
        1: "A", 2: "NS", 5: "CNAME", 6: "SOA", 12: "PTR", 15: "MX", 16: "TXT", 28: "AAAA", 33: "SRV",
        41: "OPT", 64: "SVCB", 65: "HTTPS", 255: "ANY",
    ]

    /// The mnemonic (`AAAA`), or `TYPE<n>` as in RFC 3597 for unknown types.
    public var description: String { Self.names[rawValue] ?? "TYPE\(rawValue)" }

    /// Parses a mnemonic (case-insensitive) or `TYPE<n>`.
    public init?(name: String) {
        let upper = name.uppercased()
        if let match = Self.names.first(where: { $0.value == upper }) {
            self.init(match.key)
        } else if upper.hasPrefix("TYPE"), let value = UInt16(upper.dropFirst(4)) {
            self.init(value)
        } else {
            return nil
        }
    }
}
