/// One HTTP request to an HTTPDNS service, as a value: the transport sends it, the format that
/// built it parses the answer.
///
/// The request remembers which hosts and family it asks for, because several answer formats
/// (DNSPod's plain text, DoH JSON) do not repeat the name and the parser needs it.
package struct HTTPDNSProviderRequest: Sendable, Hashable {
    /// The complete URL, already percent-encoded (for example `http://119.29.29.98/d?dn=a.com&ttl=1`).
    package var url: String
    /// The HTTP method; every current format uses `GET`.
    package var method: String
    /// Extra request headers (for example `accept: application/dns-json`), names in lower case.
    package var headers: [String: String]
    /// The request body, or `nil` for none.
    package var body: [UInt8]?
    /// The hosts asked for, normalised (lower case, no trailing dot), in request order.
    package var hosts: [String]
    /// The address family asked for (`.auto` is asked as `.both`).
    package var family: HTTPDNSAddressFamily

    package init(
        url: String,
        method: String = "GET",
        headers: [String: String] = [:],
        body: [UInt8]? = nil,
        hosts: [String],
        family: HTTPDNSAddressFamily
    ) {
        self.url = url
        self.method = method
        self.headers = headers
        self.body = body
        self.hosts = hosts
        self.family = family == .auto ? .both : family
    }
}

/// A provider's wire format: builds requests and parses answers, without any I/O.
///
/// Implementations are pure values (``DNSPodFormat``, ``AlibabaFormat``, ``DoHJSONFormat``,
/// ``IPListFormat``); time and random bytes come in as parameters so tests are repeatable.
package protocol HTTPDNSProviderFormat: Sendable {
    /// The largest number of hosts one request may carry (1 when the format has no batch form).
    var maxHostsPerRequest: Int { get }

    /// Builds the request(s) for `hosts`, at most ``maxHostsPerRequest`` of them.
    ///
    /// Most formats need one request; DoH JSON needs one per family for `.both`.
    /// - Parameters:
    ///   - hosts: names to resolve; normalised and validated here.
    ///   - family: which address families to ask for.
    ///   - now: the current Unix time in seconds, for signatures and expiry anchors.
    /// - Throws: `.invalidHost` for a bad name, `.unsupported` for too many names,
    ///   `.invalidConfiguration` for unusable credentials or URLs.
    func requests(for hosts: [String], family: HTTPDNSAddressFamily, now: Int64) throws(HTTPDNSError) -> [HTTPDNSProviderRequest]

    /// Parses the answer to `request`.
    ///
    /// - Parameters:
    ///   - status: the HTTP status code; non-2xx answers become typed errors (401/403 → `.unauthorized`).
    ///   - body: the raw body, at most ``HTTPDNSFormatLimits/maxBodyBytes``.
    ///   - request: the request this answers.
    /// - Returns: one record set per answered name, in request order. In a batch a name the
    ///   service had no address for comes back as an empty set; when no name has any address
    ///   the parser throws `.noAddress` instead.
    func parse(status: Int, body: [UInt8], for request: HTTPDNSProviderRequest) throws(HTTPDNSError) -> [HTTPDNSRecordSet]
}

extension HTTPDNSProviderFormat {
    /// Builds requests for any number of hosts by splitting them into batches of
    /// ``maxHostsPerRequest``, in order.
    package func batchedRequests(for hosts: [String], family: HTTPDNSAddressFamily, now: Int64) throws(HTTPDNSError) -> [HTTPDNSProviderRequest] {
        let size = max(1, maxHostsPerRequest)
        var out: [HTTPDNSProviderRequest] = []
        var start = 0
        while start < hosts.count {
            let end = min(start + size, hosts.count)
            out += try requests(for: Array(hosts[start..<end]), family: family, now: now)
            start = end
        }
        return out
    }
}

/// Helpers shared by the engine and every format.
package enum HTTPDNSRecordSets {
    /// Merges record sets of the same host (for example the A and AAAA answers of two DoH requests):
    /// addresses keep their order without duplicates, the TTL is the smallest known one, the first
    /// client IP wins. Hosts keep the order of their first appearance.
    package static func merge(_ sets: [HTTPDNSRecordSet]) -> [HTTPDNSRecordSet] {
        if sets.count < 2 { return sets }  // the usual one-name answer: nothing to merge
        var order: [String] = []
        var merged: [String: HTTPDNSRecordSet] = [:]
        for set in sets {
            guard var existing = merged[set.host] else {
                order.append(set.host)
                merged[set.host] = set
                continue
            }
            for address in set.ipv4 where !existing.ipv4.contains(address) { existing.ipv4.append(address) }
            for address in set.ipv6 where !existing.ipv6.contains(address) { existing.ipv6.append(address) }
            existing.ttl = HTTPDNSFormatLimits.minTTL(existing.ttl, set.ttl)
            existing.clientIP = existing.clientIP ?? set.clientIP
            merged[set.host] = existing
        }
        return order.compactMap { merged[$0] }
    }
}
