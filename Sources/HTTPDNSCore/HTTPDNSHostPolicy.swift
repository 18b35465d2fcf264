/// Which hosts the engine protects: exact names and `*.`-wildcards, with exclusions.
///
/// A wildcard `*.example.com` covers every name below `example.com` (any depth) but not
/// `example.com` itself; list both to protect both. A pattern starting with `!` (`!login.example.com`,
/// `!*.internal.example.com`) excludes the names it matches, and exclusions win over inclusions
/// (Alibaba's `NotUseHttpDnsFilter`, EMASCurl's black list): `["*", "!*.corp.example"]` protects every
/// name but the corporate ones. IP literals are never protected: there is nothing to resolve.
public struct HTTPDNSHostPolicy: Sendable, Hashable {
    /// One side of the policy: exact names, `*.` suffixes (kept with their leading dot), or everything.
    private struct Patterns: Sendable, Hashable {
        var exact = Set<String>()
        var suffixes: [String] = []
        var everything = false

        mutating func add(_ pattern: String) {
            if pattern == "*" {
                everything = true
            } else if pattern.hasPrefix("*.") {
                suffixes.append(String(pattern.dropFirst(1)))  // keeps the leading dot
            } else if !pattern.isEmpty {
                exact.insert(pattern)
            }
        }

        func matches(_ name: String) -> Bool {
            if everything || exact.contains(name) { return true }
            return suffixes.contains { name.hasSuffix($0) && name.count > $0.count }
        }

        var isEmpty: Bool { !everything && exact.isEmpty && suffixes.isEmpty }
    }

    private var included = Patterns()
    private var excluded = Patterns()

    /// Protects the given patterns (`api.example.com`, `*.example.com`, or `*` for every name), except
    /// the names matched by the `!`-patterns among them and by `excluding` (same syntax, without `!`).
    ///
    /// - Parameters:
    ///   - patterns: inclusions, and exclusions written `!pattern`.
    ///   - excluding: more exclusions. Default none.
    public init(_ patterns: [String], excluding: [String] = []) {
        for raw in patterns {
            let pattern = HTTPDNSHostPolicy.normalize(raw)
            if pattern.hasPrefix("!") {
                excluded.add(String(pattern.dropFirst()))
            } else {
                included.add(pattern)
            }
        }
        for raw in excluding {
            excluded.add(HTTPDNSHostPolicy.normalize(raw))
        }
    }

    /// Protects every name (still never IP literals).
    public static let all = HTTPDNSHostPolicy(["*"])

    /// Protects nothing.
    public static let none = HTTPDNSHostPolicy([])

    /// Whether requests to `host` go through HTTPDNS: an inclusion matches it and no exclusion does.
    public func protects(_ host: String) -> Bool {
        let name = HTTPDNSHostPolicy.normalize(host)
        guard !name.isEmpty, !HTTPDNSIPAddress.isLiteral(name) else { return false }
        guard included.matches(name) else { return false }
        return excluded.isEmpty || !excluded.matches(name)
    }

    /// Lower-cases and drops the trailing dot of an absolute name, the form hosts are compared and
    /// cached in.
    ///
    /// A name ending in two dots (`www..`) keeps them: it has an empty label, and dropping one dot
    /// would turn it into `www.`, which ``isValidHostName(_:)`` accepts as absolute (a zone key
    /// `www..` was stored as `www.` and never matched; a CNAME to `t..` pointed at `t`).
    ///
    /// Returns `host` itself (no allocation) when it is already in that form: this runs on every
    /// cache hit.
    public static func normalize(_ host: String) -> String {
        let clean = host.utf8.withContiguousStorageIfAvailable { bytes -> Bool in
            guard let last = bytes.last, last != UInt8(ascii: ".") else { return bytes.isEmpty }
            var flags: UInt8 = 0
            for byte in bytes {
                // Upper-case ASCII, or any non-ASCII byte: needs the slow path.
                flags |= (byte &- 0x41 < 26 ? 1 : 0) | (byte & 0x80)
            }
            return flags == 0
        }
        if clean == true { return host }
        // ASCII (the usual case, often just a trailing dot): fold and trim the bytes directly.
        var bytes = Array(host.utf8)
        if bytes.allSatisfy({ $0 < 0x80 }) {
            if bytes.last == UInt8(ascii: "."), bytes.dropLast().last != UInt8(ascii: ".") { bytes.removeLast() }
            for index in bytes.indices { bytes[index] = HTTPDNSASCII.lowercased(bytes[index]) }
            return String(decoding: bytes, as: UTF8.self)
        }
        var name = host.lowercased()
        if name.hasSuffix("."), !name.hasSuffix("..") { name.removeLast() }
        return name
    }

    /// Whether `host` is a syntactically valid DNS host name (RFC 1035 limits, LDH labels plus `_`),
    /// checked in one pass over its bytes.
    public static func isValidHostName(_ host: String) -> Bool {
        if let valid = host.utf8.withContiguousStorageIfAvailable(isValidHostName) { return valid }
        return Array(host.utf8).withUnsafeBufferPointer(isValidHostName)
    }

    private static func isValidHostName(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        var utf8 = bytes[...]
        if utf8.last == UInt8(ascii: ".") { utf8.removeLast() }
        guard !utf8.isEmpty, utf8.count <= 253 else { return false }
        var labelLength = 0
        var previous: UInt8 = UInt8(ascii: ".")
        for byte in utf8 {
            if byte == UInt8(ascii: ".") {
                guard labelLength > 0, previous != UInt8(ascii: "-") else { return false }
                labelLength = 0
            } else {
                let letter = (byte >= 0x61 && byte <= 0x7a) || (byte >= 0x41 && byte <= 0x5a)
                let ok = letter || (byte >= 0x30 && byte <= 0x39) || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_")
                guard ok else { return false }
                if labelLength == 0, byte == UInt8(ascii: "-") { return false }
                labelLength += 1
                guard labelLength <= 63 else { return false }
            }
            previous = byte
        }
        return labelLength > 0 && previous != UInt8(ascii: "-")
    }
}
