/// A resource record TYPE (RFC 1035 §3.2.2 and later registrations); any 16-bit value is allowed.
package struct DNSRecordType: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    package var rawValue: UInt16
    package init(rawValue: UInt16) { self.rawValue = rawValue }
    package init(_ rawValue: UInt16) { self.rawValue = rawValue }

    /// IPv4 host address (RFC 1035).
    package static let A = DNSRecordType(1)
    /// Authoritative name server (RFC 1035).
    package static let NS = DNSRecordType(2)
    /// Canonical name (RFC 1035).
    package static let CNAME = DNSRecordType(5)
    /// Start of a zone of authority; its MINIMUM drives negative caching (RFC 2308).
    package static let SOA = DNSRecordType(6)
    /// Domain name pointer (RFC 1035).
    package static let PTR = DNSRecordType(12)
    /// Mail exchange (RFC 1035).
    package static let MX = DNSRecordType(15)
    /// Text strings (RFC 1035).
    package static let TXT = DNSRecordType(16)
    /// IPv6 host address (RFC 3596).
    package static let AAAA = DNSRecordType(28)
    /// Service location (RFC 2782).
    package static let SRV = DNSRecordType(33)
    /// EDNS(0) pseudo-record (RFC 6891).
    package static let OPT = DNSRecordType(41)
    /// Service binding (RFC 9460).
    package static let SVCB = DNSRecordType(64)
    /// HTTPS service binding (RFC 9460).
    package static let HTTPS = DNSRecordType(65)
    /// Transaction signature, in the additional section only (RFC 8945 §4.2).
    package static let TSIG = DNSRecordType(250)
    /// Incremental zone transfer, in questions only (RFC 1995).
    package static let IXFR = DNSRecordType(251)
    /// Full zone transfer, in questions only (RFC 5936).
    package static let AXFR = DNSRecordType(252)
    /// Any type, in questions only (RFC 1035 QTYPE `*`).
    package static let ANY = DNSRecordType(255)

    private static let names: [UInt16: String] = [
        1: "A", 2: "NS", 5: "CNAME", 6: "SOA", 12: "PTR", 15: "MX", 16: "TXT", 28: "AAAA", 33: "SRV",
        41: "OPT", 64: "SVCB", 65: "HTTPS", 250: "TSIG", 251: "IXFR", 252: "AXFR", 255: "ANY",
    ]

    /// The mnemonic (`AAAA`), or `TYPE<n>` as in RFC 3597 for unknown types.
    package var description: String { Self.names[rawValue] ?? "TYPE\(rawValue)" }

    /// Parses a mnemonic (case-insensitive) or `TYPE<n>`.
    package init?(name: String) {
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
