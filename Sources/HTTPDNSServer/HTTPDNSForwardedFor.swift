import HTTPDNSCore

/// The client's address from `X-Forwarded-For`, believed only as far as trusted proxies vouch for it.
///
/// Each proxy appends the address it received the request from, so the header reads left to right
/// from the (claimed) client towards us, and only the right end is written by proxies we know.
/// Starting from the connection's peer: while the current hop is a trusted proxy, step one entry
/// left; the first untrusted hop is the client. Anything left of it was written by the client and
/// is ignored, so a client cannot choose its own address by sending the header itself.
///
/// - An untrusted peer: its header is ignored, the peer is the client.
/// - Every hop trusted: the leftmost entry is the client.
/// - An entry that is not an address (`unknown`, an obfuscated name, junk): the search stops, and the
///   client is the trusted hop that wrote it (the nearest address known to be true).
/// - Entries may carry a port (`192.0.2.1:1234`, `[2001:db8::1]:443`), which is dropped; several
///   header lines count as one list in order (RFC 9110 §5.3). At most ``maxHops`` entries, from the
///   right, are looked at.
package enum HTTPDNSForwardedFor {
    /// Most entries examined, from the right. 32.
    package static let maxHops = 32

    /// The client of a request that came from `peer` carrying the `X-Forwarded-For` lines `values`.
    package static func client(peer: HTTPDNSIPAddress, values: [String], trusted: HTTPDNSTrustedProxies) -> HTTPDNSIPAddress {
        guard trusted.contains(peer), !values.isEmpty else { return peer }
        var current = peer
        var examined = 0
        for value in values.reversed() {
            for item in value.split(separator: ",", omittingEmptySubsequences: false).reversed() {
                guard examined < maxHops else { return current }
                examined += 1
                let text = item.trimmingASCIISpaces
                if text.isEmpty { continue }  // "a, , b": an empty list element (RFC 9110 §5.6.1)
                guard let hop = address(text) else { return current }
                current = hop
                guard trusted.contains(hop) else { return hop }
            }
        }
        return current
    }

    /// One entry as an address: bare, `v4:port` or `[v6]:port` (the port is dropped).
    static func address(_ text: String) -> HTTPDNSIPAddress? {
        guard text.utf8.count <= 64 else { return nil }
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else { return nil }
            let rest = text[text.index(after: close)...]
            guard rest.isEmpty || isPort(rest.dropFirst()) && rest.first == ":" else { return nil }
            let inside = text[text.index(after: text.startIndex)..<close]
            guard let address = HTTPDNSIPAddress(String(inside)), address.family == .v6 else { return nil }
            return address
        }
        if let address = HTTPDNSIPAddress(text), !text.hasPrefix("[") { return address }
        // IPv4 with a port: exactly one colon.
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, isPort(parts[1]), let address = HTTPDNSIPAddress(String(parts[0])), address.family == .v4 else { return nil }
        return address
    }

    private static func isPort(_ text: Substring) -> Bool {
        (1...5).contains(text.count) && text.allSatisfy { $0.isASCII && $0.isNumber } && Int(text).map { $0 <= 65_535 } == true
    }
}
