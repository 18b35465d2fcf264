import DNSSockets
import HTTPDNSCore

/// The system resolver (`getaddrinfo`) as an ``HTTPDNSResolver``: the usual LocalDNS fallback.
///
/// The blocking call runs on a bounded pool of threads (16, lookups beyond wait their turn), never on
/// the cooperative pool; it gives no TTL, so the engine applies its floor.
public struct HTTPDNSSystemResolver: HTTPDNSResolver, HTTPDNSSelfTimedResolver {
    public let name = "system"
    public var origin: HTTPDNSAnswer.Origin { .localDNS }
    private let resolver: DNSSystemResolver

    /// - Parameter timeout: how long to wait for `getaddrinfo`. Default 5 s.
    public init(timeout: Duration = .seconds(5)) {
        resolver = DNSSystemResolver(timeout: timeout)
    }

    public func resolve(_ host: String, family: HTTPDNSAddressFamily) async throws -> HTTPDNSRecordSet {
        try await resolve(host, family: family, using: resolver)
    }

    func resolve(_ host: String, family: HTTPDNSAddressFamily, within seconds: Double) async throws -> HTTPDNSRecordSet {
        var limited = resolver
        limited.timeout = min(resolver.timeout, .milliseconds(Int64(max(seconds, 0.001) * 1000)))
        return try await resolve(host, family: family, using: limited)
    }

    private func resolve(_ host: String, family: HTTPDNSAddressFamily, using resolver: DNSSystemResolver) async throws -> HTTPDNSRecordSet {
        let addresses = try await resolver.resolve(host, family: family)
        return HTTPDNSRecordSet(
            host: host, ipv4: addresses.filter { $0.family == .v4 }, ipv6: addresses.filter { $0.family == .v6 })
    }
}

/// Plain DNS (UDP, TCP on truncation) to a chosen server, as an ``HTTPDNSResolver``.
///
/// Spoofing resistance per RFC 5452 lives in the socket client underneath: random ID and source port, and a
/// reply is accepted only when ID, question, server address and port match.
public struct HTTPDNSUDPResolver: HTTPDNSResolver, HTTPDNSSelfTimedResolver {
    public let name: String
    public var origin: HTTPDNSAnswer.Origin { .dns }
    package let server: HTTPDNSIPAddress
    package let port: UInt16
    private let timeout: Duration
    private let client = DNSSocketClient()

    /// - Parameters:
    ///   - server: the DNS server's address.
    ///   - port: its port. Default 53.
    ///   - timeout: time limit of one query. Default 5 s.
    public init(server: HTTPDNSIPAddress, port: UInt16 = 53, timeout: Duration = .seconds(5)) {
        self.server = server
        self.port = port
        self.timeout = timeout
        self.name = "udp \(server.uriText):\(port)"
    }

    public func resolve(_ host: String, family: HTTPDNSAddressFamily) async throws -> HTTPDNSRecordSet {
        try await lookup(host, family: family, timeout: timeout)
    }

    func resolve(_ host: String, family: HTTPDNSAddressFamily, within seconds: Double) async throws -> HTTPDNSRecordSet {
        try await lookup(host, family: family, timeout: min(timeout, .milliseconds(Int64(max(seconds, 0.001) * 1000))))
    }

    private func lookup(_ host: String, family: HTTPDNSAddressFamily, timeout: Duration) async throws -> HTTPDNSRecordSet {
        let found = try await client.lookupAddresses(host, family: family, server: server, port: port, timeout: timeout)
        return HTTPDNSRecordSet(
            host: host,
            ipv4: found.addresses.filter { $0.family == .v4 },
            ipv6: found.addresses.filter { $0.family == .v6 },
            ttl: found.ttl.map { Int($0) })
    }
}
