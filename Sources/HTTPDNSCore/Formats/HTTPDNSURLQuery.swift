/// Builds percent-encoded query strings and appends them to configured URLs.
struct HTTPDNSURLQuery {
    private(set) var pairs: [(name: String, value: String)] = []

    init() {}

    /// Adds `name=value`; `value` is percent-encoded except for RFC 3986 unreserved characters and
    /// the characters in `keep` (DNSPod and Alibaba send batch lists as literal `a.com,b.com`).
    mutating func add(_ name: String, _ value: String, keep: Set<UInt8> = []) {
        pairs.append((name, Self.encode(value, keep: keep)))
    }

    /// `a=1&b=2`.
    var text: String { pairs.map { "\($0.name)=\($0.value)" }.joined(separator: "&") }

    /// `base` with the query appended: `?` or `&` depending on whether `base` already has a query,
    /// and inserted before any `#fragment`.
    func appended(to base: String) -> String {
        var main = Substring(base)
        var fragment = Substring("")
        if let hash = base.firstIndex(of: "#") {
            main = base[..<hash]
            fragment = base[hash...]
        }
        guard !pairs.isEmpty else { return String(main) + fragment }
        let separator: String
        if let question = main.firstIndex(of: "?") {
            separator = main.index(after: question) == main.endIndex || main.hasSuffix("&") ? "" : "&"
        } else {
            separator = "?"
        }
        return String(main) + separator + text + fragment
    }

    /// Percent-encodes everything except unreserved characters (RFC 3986 §2.3) and `keep`.
    static func encode(_ value: String, keep: Set<UInt8> = []) -> String {
        let hex = Array("0123456789ABCDEF".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(value.utf8.count)
        for byte in value.utf8 {
            let unreserved = (byte >= 0x41 && byte <= 0x5a) || (byte >= 0x61 && byte <= 0x7a)
                || (byte >= 0x30 && byte <= 0x39) || byte == 0x2d || byte == 0x2e || byte == 0x5f || byte == 0x7e
            if unreserved || keep.contains(byte) {
                out.append(byte)
            } else {
                out += [UInt8(ascii: "%"), hex[Int(byte >> 4)], hex[Int(byte & 0x0f)]]
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Checks that a configured service URL is absolute HTTP(S) and drops trailing slashes.
    static func checkedBase(_ url: String, source: String) throws(HTTPDNSError) -> String {
        let lower = url.lowercased()
        guard lower.hasPrefix("http://") || lower.hasPrefix("https://"), url.utf8.count <= 2048,
              !url.utf8.contains(where: { $0 <= 0x20 || $0 == 0x7f })
        else {
            throw HTTPDNSError(.invalidConfiguration, "service URL must be absolute http(s) without spaces", source: source)
        }
        var base = Substring(url)
        while base.hasSuffix("/"), !base.hasSuffix("://") { base = base.dropLast() }
        return String(base)
    }
}
