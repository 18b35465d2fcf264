/// Builds percent-encoded query strings and appends them to configured URLs.
package struct HTTPDNSURLQuery {
    /// `a=1&b=2`, encoded as pairs are added: one buffer per request, no string per pair.
    private var bytes: [UInt8] = []

    package init() {}

    /// `keep` for lists sent literally (`a.com,b.com`).
    package static let listSeparator: Set<UInt8> = [UInt8(ascii: ",")]

    /// Adds `name=value`; `value` is percent-encoded except for RFC 3986 unreserved characters and
    /// the characters in `keep` (DNSPod and Alibaba send batch lists as literal `a.com,b.com`).
    package mutating func add(_ name: String, _ value: String, keep: Set<UInt8> = []) {
        if bytes.isEmpty {
            bytes.reserveCapacity(64 + value.utf8.count)
        } else {
            bytes.append(UInt8(ascii: "&"))
        }
        bytes += name.utf8
        bytes.append(UInt8(ascii: "="))
        Self.encode(value, keep: keep, into: &bytes)
    }

    /// `base` with the query appended: `?` or `&` depending on whether `base` already has a query,
    /// and inserted before any `#fragment`.
    // Works on UTF-8 bytes (every provider request builds one URL this way).
    package func appended(to base: String) -> String {
        let utf8 = base.utf8
        let hash = utf8.firstIndex(of: UInt8(ascii: "#")) ?? utf8.endIndex
        var out: [UInt8] = []
        out.reserveCapacity(utf8.count + bytes.count + 1)
        out += utf8[..<hash]
        if !bytes.isEmpty {
            if let question = out.firstIndex(of: UInt8(ascii: "?")) {
                if question != out.count - 1, out.last != UInt8(ascii: "&") { out.append(UInt8(ascii: "&")) }
            } else {
                out.append(UInt8(ascii: "?"))
            }
            out += bytes
        }
        out += utf8[hash...]
        return String(decoding: out, as: UTF8.self)
    }

    private static let hexDigits: [UInt8] = Array("0123456789ABCDEF".utf8)

    /// Percent-encodes everything except unreserved characters (RFC 3986 §2.3) and `keep`.
    package static func encode(_ value: String, keep: Set<UInt8> = []) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(value.utf8.count)
        encode(value, keep: keep, into: &out)
        return String(decoding: out, as: UTF8.self)
    }

    private static func encode(_ value: String, keep: Set<UInt8>, into out: inout [UInt8]) {
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
