/// Builds percent-encoded query strings and appends them to configured URLs.
package struct HTTPDNSURLQuery {
    private(set) var pairs: [(name: String, value: String)] = []

    package init() {}

    /// Adds `name=value`; `value` is percent-encoded except for RFC 3986 unreserved characters and
    /// the characters in `keep` (DNSPod and Alibaba send batch lists as literal `a.com,b.com`).
    package mutating func add(_ name: String, _ value: String, keep: Set<UInt8> = []) {
        pairs.append((name, Self.encode(value, keep: keep)))
    }

    /// `a=1&b=2`.
    var text: String { String(decoding: textBytes, as: UTF8.self) }

    private var textBytes: [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(pairs.reduce(0) { $0 + $1.name.utf8.count + $1.value.utf8.count + 2 })
        for (index, pair) in pairs.enumerated() {
            if index > 0 { out.append(UInt8(ascii: "&")) }
            out += pair.name.utf8
            out.append(UInt8(ascii: "="))
            out += pair.value.utf8
        }
        return out
    }

    /// `base` with the query appended: `?` or `&` depending on whether `base` already has a query,
    /// and inserted before any `#fragment`.
    // Works on UTF-8 bytes (every provider request builds one URL this way).
    package func appended(to base: String) -> String {
        let bytes = Array(base.utf8)
        let hash = bytes.firstIndex(of: UInt8(ascii: "#")) ?? bytes.endIndex
        var out = Array(bytes[..<hash])
        if !pairs.isEmpty {
            if let question = out.firstIndex(of: UInt8(ascii: "?")) {
                if question != out.count - 1, out.last != UInt8(ascii: "&") { out.append(UInt8(ascii: "&")) }
            } else {
                out.append(UInt8(ascii: "?"))
            }
            out += textBytes
        }
        out += bytes[hash...]
        return String(decoding: out, as: UTF8.self)
    }

    private static let hexDigits: [UInt8] = Array("0123456789ABCDEF".utf8)

    /// Percent-encodes everything except unreserved characters (RFC 3986 §2.3) and `keep`.
    package static func encode(_ value: String, keep: Set<UInt8> = []) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(value.utf8.count)
        for byte in value.utf8 {
            let unreserved = (byte >= 0x41 && byte <= 0x5a) || (byte >= 0x61 && byte <= 0x7a)
                || (byte >= 0x30 && byte <= 0x39) || byte == 0x2d || byte == 0x2e || byte == 0x5f || byte == 0x7e
            if unreserved || (!keep.isEmpty && keep.contains(byte)) {
                out.append(byte)
            } else {
                out.append(UInt8(ascii: "%"))
                out.append(hexDigits[Int(byte >> 4)])
                out.append(hexDigits[Int(byte & 0x0f)])
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Checks that a configured service URL is absolute HTTP(S) and drops trailing slashes.
    // On bytes, without lower-casing a copy: it runs for every request a provider builds.
    package static func checkedBase(_ url: String, source: String) throws(HTTPDNSError) -> String {
        let bytes = url.utf8
        guard HTTPDNSASCII.hasPrefixIgnoringCase(bytes, "http://") || HTTPDNSASCII.hasPrefixIgnoringCase(bytes, "https://"),
              bytes.count <= 2048,
              !bytes.contains(where: { $0 <= 0x20 || $0 == 0x7f })
        else {
            throw HTTPDNSError(.invalidConfiguration, "service URL must be absolute http(s) without spaces", source: source)
        }
        guard bytes.last == UInt8(ascii: "/") else { return url }
        var base = Substring(url)
        while base.hasSuffix("/"), !base.hasSuffix("://") { base = base.dropLast() }
        return String(base)
    }
}
