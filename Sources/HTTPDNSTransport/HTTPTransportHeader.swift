@_spi(HTTPDNSPackage) import HTTPDNSCore

/// One HTTP header field, in the order it was sent or received.
///
/// Names keep the case they were given; compare them case-insensitively (RFC 9110 §5.1).
package struct HTTPTransportHeader: Sendable, Hashable, CustomStringConvertible {
    /// The field name, for example `Content-Type`.
    package var name: String
    /// The field value, without surrounding whitespace.
    package var value: String

    package init(name: String, value: String) {
        self.name = name
        self.value = value
    }

    package var description: String { "\(name): \(value)" }

    /// True when `name` is an RFC 9110 token (the only characters a field name may hold).
    var hasValidName: Bool {
        !name.isEmpty && name.utf8.allSatisfy(HTTPTransportHeader.isTokenByte)
    }

    /// True when the value has no CR, LF or NUL, which would let a caller inject extra headers.
    var hasValidValue: Bool {
        !value.utf8.contains { $0 == 0x0D || $0 == 0x0A || $0 == 0x00 }
    }

    /// RFC 9110 §5.6.2 `tchar`.
    static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"):
            return true
        default:
            return "!#$%&'*+-.^_`|~".utf8.contains(byte)
        }
    }
}

extension Array where Element == HTTPTransportHeader {
    /// The value of the first field named `name` (case-insensitive), or nil.
    func httpdnsFirstValue(_ name: String) -> String? {
        first { HTTPDNSASCII.equalsIgnoringCase($0.name, name) }?.value
    }
}
