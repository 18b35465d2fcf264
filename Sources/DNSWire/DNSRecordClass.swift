/// A resource record CLASS (RFC 1035 §3.2.4). In OPT records the field is the UDP payload size instead.
package struct DNSRecordClass: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    package var rawValue: UInt16
    package init(rawValue: UInt16) { self.rawValue = rawValue }
    package init(_ rawValue: UInt16) { self.rawValue = rawValue }

    /// The Internet.
    package static let IN = DNSRecordClass(1)
    /// Chaos (server identification queries such as `version.bind`).
    package static let CH = DNSRecordClass(3)
    /// Any class, in questions only.
    package static let ANY = DNSRecordClass(255)

    package var description: String {
        switch rawValue {
        case 1: "IN"
        case 3: "CH"
        case 255: "ANY"
        default: "CLASS\(rawValue)"
        }
    }
}
