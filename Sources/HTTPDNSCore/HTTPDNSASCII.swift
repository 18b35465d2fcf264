/// ASCII case folding: the one rule for the names the protocols here compare without case, on bytes.
///
/// HTTP field names (RFC 9110 §5.1), media types (§8.3.1), cache directives (RFC 9111 §5.2), URI
/// schemes (RFC 3986 §3.1) and host names (RFC 4343) are case-insensitive in ASCII only: `A`-`Z`
/// fold to `a`-`z` and every other byte, non-ASCII included, is itself. No locale and no Unicode
/// rules (`"K"` is not `"\u{212A}"`, the Kelvin sign `String.lowercased()` maps to `k`), and
/// nothing allocates but ``lowercased(_:)``.
// Public under `@_spi(HTTPDNSPackage)` rather than `package`, as LRUTable is: Swift 6.3 serialises
// no body of an `@inlinable package` declaration, so the generic forms ran unspecialised, through
// witness tables, in every other module (bench row 2's profile: a header lookup in the provider's
// freshness check, in `HTTPDNSASCII.equalsIgnoringCase<Sequence, Sequence>`). SPI keeps it out of
// the public API; modules that use it import HTTPDNSCore with `@_spi(HTTPDNSPackage)`.
@_spi(HTTPDNSPackage) public enum HTTPDNSASCII {
    /// `byte` with `A`-`Z` folded to `a`-`z`.
    @inlinable
    public static func lowercased(_ byte: UInt8) -> UInt8 {
        byte &- UInt8(ascii: "A") < 26 ? byte | 0x20 : byte
    }

    /// `bytes` with `A`-`Z` folded to `a`-`z`, as text.
    @inlinable
    public static func lowercased<Bytes: Sequence<UInt8>>(_ bytes: Bytes) -> String {
        String(decoding: bytes.map { lowercased($0) }, as: UTF8.self)
    }

    /// Whether two byte sequences are equal once `A`-`Z` are folded.
    @inlinable
    public static func equalsIgnoringCase<LHS: Sequence<UInt8>, RHS: Sequence<UInt8>>(_ lhs: LHS, _ rhs: RHS) -> Bool {
        var other = rhs.makeIterator()
        for byte in lhs {
            guard let next = other.next(), lowercased(byte) == lowercased(next) else { return false }
        }
        return other.next() == nil
    }

    /// Whether two strings are equal once `A`-`Z` are folded (their UTF-8 lengths compared first).
    @inlinable
    public static func equalsIgnoringCase(_ lhs: String, _ rhs: String) -> Bool {
        lhs.utf8.count == rhs.utf8.count && equalsIgnoringCase(lhs.utf8, rhs.utf8)
    }

    /// Whether `bytes` start with `prefix` once `A`-`Z` are folded.
    @inlinable
    public static func hasPrefixIgnoringCase<Bytes: Sequence<UInt8>>(_ bytes: Bytes, _ prefix: String) -> Bool {
        var rest = bytes.makeIterator()
        for want in prefix.utf8 {
            guard let byte = rest.next(), lowercased(byte) == lowercased(want) else { return false }
        }
        return true
    }

    /// `raw` for an error message: quoted, at most 80 scalars, anything but printable ASCII as `?`
    /// (a hostile value can neither break the line nor send terminal escapes).
    public static func quoted(_ raw: String) -> String {
        let clipped = raw.unicodeScalars.prefix(80).map { $0.isASCII && $0.value >= 0x20 && $0.value < 0x7f ? Character($0) : "?" }
        return "\"" + String(clipped) + "\""
    }
}
