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
    ///
    /// The last entries made are kept with what they were made from: a client sends request after
    /// request to the same addresses, and making the names was 297 of the 5,391 samples of bench
    /// row 5's pool threads. The entries are a function of the port and the list alone, so a copy
    /// kept from one request is the same for any other.
    static func entries(port: Int, addresses: [HTTPDNSIPAddress]) -> Entries? {
        if let kept = last.withLock({ $0 }), kept.port == port, kept.addresses == addresses { return kept.entries }
        guard let entries = makeEntries(port: port, addresses: addresses) else { return nil }
        last.withLock { $0 = (port, addresses, entries) }
        return entries
    }

    private static let last = HTTPDNSLock<(port: Int, addresses: [HTTPDNSIPAddress], entries: Entries)?>(nil)

    private static func makeEntries(port: Int, addresses: [HTTPDNSIPAddress]) -> Entries? {
        // Written as bytes: this runs for every pinned request (bench row 5 measured the per-byte
        // `String(radix:)` form at a twentieth of the pool's time).
        var name: [UInt8] = []
        name.reserveCapacity(maxNameLength)
        var used = [HTTPDNSIPAddress]()
        for address in addresses {
            // One label per address: 8 hex digits for IPv4, 32 for IPv6, so the encoding is injective.
            let bytes = address.bytes
            guard name.count + bytes.count * 2 + 1 + suffix.utf8.count <= maxNameLength else { break }
            for byte in bytes {
                name.append(hexDigits[Int(byte >> 4)])
                name.append(hexDigits[Int(byte & 0x0F)])
            }
            name.append(UInt8(ascii: "."))
            used.append(address)
        }
        guard !used.isEmpty else { return nil }
        name.append(contentsOf: suffix.utf8)
        let host = String(decoding: name, as: UTF8.self)
        let list = used.map(\.uriText).joined(separator: ",")
        return Entries(connectTo: "::\(host):\(port)", resolve: "\(host):\(port):\(list)", addresses: used)
    }

    private static let hexDigits = Array("0123456789abcdef".utf8)

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
