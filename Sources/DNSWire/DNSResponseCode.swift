/// A response code (RFC 1035 §4.1.1, RFC 6895): the 4 header bits.
package struct DNSResponseCode: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    package var rawValue: UInt8
    package init(rawValue: UInt8) { self.rawValue = rawValue }
    package init(_ rawValue: UInt8) { self.rawValue = rawValue }

    package static let noError = DNSResponseCode(0)
    package static let formatError = DNSResponseCode(1)
    package static let serverFailure = DNSResponseCode(2)
    /// The name does not exist (NXDOMAIN).
    package static let nameError = DNSResponseCode(3)
    package static let notImplemented = DNSResponseCode(4)
    package static let refused = DNSResponseCode(5)
    /// The server is not authoritative for the zone, or a TSIG failed (RFC 8945 §5.3.2, RFC 1996 §3).
    package static let notAuthoritative = DNSResponseCode(9)

    package var description: String {
        switch rawValue {
        case 0: "NOERROR"
        case 1: "FORMERR"
        case 2: "SERVFAIL"
        case 3: "NXDOMAIN"
        case 4: "NOTIMP"
        case 5: "REFUSED"
        case 9: "NOTAUTH"
        default: "RCODE\(rawValue)"
        }
    }
}
