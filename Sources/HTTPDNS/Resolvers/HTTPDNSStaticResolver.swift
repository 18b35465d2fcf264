import HTTPDNSCore

/// Fixed answers, like curl's `--resolve`: for pinning, and for tests.
public struct HTTPDNSStaticResolver: HTTPDNSResolver, HTTPDNSSelfTimedResolver {
    public let name: String
    public var origin: HTTPDNSAnswer.Origin { .static }
    private let table: [String: [HTTPDNSIPAddress]]
    private let ttl: Int

    /// - Parameters:
    ///   - entries: host → addresses (hosts are normalised; `*` is not special).
    ///   - ttl: the TTL every answer carries. Default 3,600.
    public init(_ entries: [String: [HTTPDNSIPAddress]], ttl: Int = 3_600, name: String = "static") {
        var table: [String: [HTTPDNSIPAddress]] = [:]
        for (host, addresses) in entries {
            table[HTTPDNSHostPolicy.normalize(host), default: []].append(contentsOf: addresses)
        }
        self.table = table
        self.ttl = ttl
        self.name = name
    }

    /// Parses curl-style entries `HOST:PORT:ADDR[,ADDR…]` (the port is accepted and ignored here;
    /// IPv6 addresses may be bracketed).
    public init(curlStyle entries: [String], ttl: Int = 3_600) throws {
        self.init(try HTTPDNSStaticResolver.curlStyleTable(entries), ttl: ttl)
    }

    /// The table of curl-style entries `HOST:PORT:ADDR[,ADDR…]` (for ``HTTPDNSConfiguration/staticEntries``).
    /// - Throws: `.invalidConfiguration` naming the bad entry.
    package static func curlStyleTable(_ entries: [String]) throws -> [String: [HTTPDNSIPAddress]] {
        var table: [String: [HTTPDNSIPAddress]] = [:]
        for entry in entries {
            let parts = entry.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false)
            guard parts.count == 3, !parts[0].isEmpty, UInt16(parts[1]) != nil else {
                throw HTTPDNSError(.invalidConfiguration, "expected HOST:PORT:ADDRESS, got \(entry)")
            }
            var addresses: [HTTPDNSIPAddress] = []
            for text in parts[2].split(separator: ",") {
                guard let address = HTTPDNSIPAddress(String(text)) else {
                    throw HTTPDNSError(.invalidConfiguration, "not an IP address: \(text)")
                }
                addresses.append(address)
            }
            guard !addresses.isEmpty else {
                throw HTTPDNSError(.invalidConfiguration, "no address in \(entry)")
            }
            table[HTTPDNSHostPolicy.normalize(String(parts[0])), default: []].append(contentsOf: addresses)
        }
        return table
    }

    public func resolve(_ host: String, family: HTTPDNSAddressFamily) async throws -> HTTPDNSRecordSet {
        guard let addresses = table[HTTPDNSHostPolicy.normalize(host)] else {
            throw HTTPDNSError(.nameNotFound, "no static entry", host: host, source: name)
        }
        return HTTPDNSRecordSet(
            host: host,
            ipv4: addresses.filter { $0.family == .v4 },
            ipv6: addresses.filter { $0.family == .v6 },
            ttl: ttl)
    }

    /// Answers at once: no time limit is needed.
    func resolve(_ host: String, family: HTTPDNSAddressFamily, within seconds: Double) async throws -> HTTPDNSRecordSet {
        try await resolve(host, family: family)
    }
}
