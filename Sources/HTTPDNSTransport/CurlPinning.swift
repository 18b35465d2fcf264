import HTTPDNSCore

/// Builds the `CURLOPT_CONNECT_TO` and `CURLOPT_RESOLVE` entries that send a request only to its
/// pinned addresses.
///
/// `CURLOPT_RESOLVE` alone is not enough: its entries live in the multi handle's shared DNS cache
/// under the URL's `host:port`, and the connection cache matches connections by URL host only, so a
/// request pinned to 127.0.0.3 could reuse a connection (or a cache entry) made for 127.0.0.2.
/// Instead every request connects to a synthetic name that encodes its exact address list:
///
/// - `CURLOPT_CONNECT_TO ::<synthetic>:<port>` redirects the connection (not SNI, not
///   verification, not `Host`) to the synthetic name; libcurl only reuses a connection whose
///   connect-to host is the same, so the same address list;
/// - `CURLOPT_RESOLVE <synthetic>:<port>:<ip>,<ip>` gives that name exactly those addresses. Since the
///   name is a function of the list, no other request can overwrite it with different addresses.
///
/// The synthetic name is under `.invalid` (RFC 6761), so even a bug that let it reach a real resolver
/// would get NXDOMAIN, never an address.
enum CurlPinning {
    /// Longest synthetic name: libcurl copies `CURLOPT_RESOLVE` host names into 256-byte buffers
    /// and truncates longer DNS-cache keys, which would make different lists collide.
    static let maxNameLength = 240
    static let suffix = "pin.httpdns.invalid"

    /// The libcurl option strings for one request.
    struct Entries: Equatable {
        /// The `CURLOPT_CONNECT_TO` entry.
        var connectTo: String
        /// The `CURLOPT_RESOLVE` entry.
        var resolve: String
        /// The addresses actually used (a prefix of the list given).
        var addresses: [HTTPDNSIPAddress]
    }

    /// The entries for `addresses` (in order) at `port`, or nil when `addresses` is empty.
    static func entries(port: Int, addresses: [HTTPDNSIPAddress]) -> Entries? {
        var labels = [String]()
        var used = [HTTPDNSIPAddress]()
        var length = suffix.utf8.count
        for address in addresses {
            // One label per address: 8 hex digits for IPv4, 32 for IPv6, so the encoding is injective.
            let label = address.bytes.map { byte in
                let digits = String(byte, radix: 16)
                return byte < 16 ? "0" + digits : digits
            }.joined()
            guard length + label.utf8.count + 1 <= maxNameLength else { break }
            length += label.utf8.count + 1
            labels.append(label)
            used.append(address)
        }
        guard !used.isEmpty else { return nil }
        let name = (labels + [suffix]).joined(separator: ".")
        let list = used.map(\.uriText).joined(separator: ",")
        return Entries(connectTo: "::\(name):\(port)", resolve: "\(name):\(port):\(list)", addresses: used)
    }

    /// `message` with the synthetic connect-to name replaced by the real host and its addresses, so
    /// that errors name what the caller asked for (libcurl's messages name the host it connected to).
    static func humanize(_ message: String, host: String, addresses: [HTTPDNSIPAddress]) -> String {
        guard let end = message.range(of: "." + suffix) else { return message }
        var start = end.lowerBound
        while start > message.startIndex {
            let previous = message.index(before: start)
            guard message[previous].isHexDigit || message[previous] == "." else { break }
            start = previous
        }
        let list = addresses.map(\.description).joined(separator: ", ")
        return humanize(
            message.replacingCharacters(in: start..<end.upperBound, with: "\(host) (\(list))"), host: host, addresses: addresses)
    }
}
