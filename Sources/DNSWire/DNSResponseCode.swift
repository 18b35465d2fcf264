/// A response code (RFC 1035 §4.1.1, RFC 6895): the 4 header bits.
public struct DNSResponseCode: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    public init(_ rawValue: UInt8) { self.rawValue = rawValue }

    public static let noError = DNSResponseCode(0)
    public static let formatError = DNSResponseCode(1)
    public static let serverFailure = DNSResponseCode(2)
    /// The name does not exist (NXDOMAIN).
    public static let nameError = DNSResponseCode(3)
    public static let notImplemented = DNSResponseCode(4)
    public static let refused = DNSResponseCode(5)

    public var description: String {
        switch rawValue {
        case 0: "NOERROR"
        case 1: "FORMERR"
        case 2: "SERVFAIL"
        case 3: "NXDOMAIN"
        case 4: "NOTIMP"
        case 5: "REFUSED"
        default: "RCODE\(rawValue)"
        }
    }
}
