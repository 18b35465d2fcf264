/// A resource record CLASS (RFC 1035 §3.2.4). In OPT records the field is the UDP payload size instead.
public struct DNSRecordClass: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    public var rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }
    public init(_ rawValue: UInt16) { self.rawValue = rawValue }

    /// The Internet.
    public static let IN = DNSRecordClass(1)
    /// Chaos (server identification queries such as `version.bind`).
    public static let CH = DNSRecordClass(3)
    /// Any class, in questions only.
    public static let ANY = DNSRecordClass(255)

    public var description: String {
        switch rawValue {
        case 1: "IN"
        case 3: "CH"
        case 255: "ANY"
        default: "CLASS\(rawValue)"
        }
    }
}
