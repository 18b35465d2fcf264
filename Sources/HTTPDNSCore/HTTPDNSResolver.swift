/// A source of addresses for names: an HTTPDNS service, a DNS server, the system resolver.
///
/// Small on purpose (like swift-nio's `Resolver`): the engine adds caching, hygiene, failover and
/// timeouts around it, so an implementation only asks once and reports what it got.
public protocol HTTPDNSResolver: Sendable {
    /// A short label for reports and events, for example `dnspod http://127.0.0.1:8053`.
    var name: String { get }

    /// How answers from this resolver are labelled (``HTTPDNSAnswer/origin``). Default `.httpdns`.
    var origin: HTTPDNSAnswer.Origin { get }

    /// Resolves `host` (lower-case, no trailing dot, never an IP literal) for `family`.
    ///
    /// - Returns: the addresses in the provider's order; the engine filters and deduplicates them.
    /// - Throws: ``HTTPDNSError``; `.nameNotFound` for NXDOMAIN, `.noAddress` for an empty answer.
    func resolve(_ host: String, family: HTTPDNSAddressFamily) async throws -> HTTPDNSRecordSet

    /// Resolves several names at once where the service has a batch form (DNSPod `dn=a,b`, Alibaba
    /// `/resolve`); used for pre-resolution at start-up.
    ///
    /// - Returns: the record sets it got, in any order; names it has nothing for may be missing.
    ///   The default asks ``resolve(_:family:)`` for each name in turn.
    func resolve(batch hosts: [String], family: HTTPDNSAddressFamily) async throws -> [HTTPDNSRecordSet]
}

extension HTTPDNSResolver {
    public var origin: HTTPDNSAnswer.Origin { .httpdns }

    public func resolve(batch hosts: [String], family: HTTPDNSAddressFamily) async throws -> [HTTPDNSRecordSet] {
        var sets: [HTTPDNSRecordSet] = []
        for host in hosts {
            if let set = try? await resolve(host, family: family) { sets.append(set) }
        }
        return sets
    }
}
