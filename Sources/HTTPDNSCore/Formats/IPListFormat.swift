/// A self-hosted IP list service (seed 003): `GET URL?host=HOST` answers
/// `{"ips":["1.2.3.4","2001:db8::1",…],"ttl":N}` (`ttl` optional, `host` optional but checked when
/// present). Used for the "domain blocked → connect to a known IP" flow, so both families come back
/// whatever was asked; the engine picks what it needs.
package struct IPListFormat: HTTPDNSProviderFormat {
    /// Where to send requests.
    package struct Configuration: Sendable, Hashable {
        /// The service URL; may already carry a query (`?key=…`), `host=` is appended after it.
        package var url: String
        /// Extra headers (for example an authorization header). Default none.
        package var headers: [String: String] = [:]

        package init(url: String) {
            self.url = url
        }
    }

    /// The configuration.
    package var configuration: Configuration

    package init(configuration: Configuration) {
        self.configuration = configuration
    }

    static let source = "iplist"

    package var maxHostsPerRequest: Int { 1 }

    package func requests(for hosts: [String], family: HTTPDNSAddressFamily, now: Int64) throws(HTTPDNSError) -> [HTTPDNSProviderRequest] {
        [try request(for: hosts, family: family)]
    }

    /// The request for one host.
    package func request(for hosts: [String], family: HTTPDNSAddressFamily) throws(HTTPDNSError) -> HTTPDNSProviderRequest {
        let names = try HTTPDNSFormatLimits.normalizeHosts(hosts, max: 1, source: Self.source)
        let lower = configuration.url.lowercased()
        guard lower.hasPrefix("http://") || lower.hasPrefix("https://"), configuration.url.utf8.count <= 2048,
              !configuration.url.utf8.contains(where: { $0 <= 0x20 || $0 == 0x7f })
        else {
            throw HTTPDNSError(.invalidConfiguration, "service URL must be absolute http(s) without spaces", source: Self.source)
        }
        var query = HTTPDNSURLQuery()
        query.add("host", names[0])
        return HTTPDNSProviderRequest(
            url: query.appended(to: configuration.url), headers: configuration.headers, hosts: names, family: family)
    }

    package func parse(status: Int, body: [UInt8], for request: HTTPDNSProviderRequest) throws(HTTPDNSError) -> [HTTPDNSRecordSet] {
        guard HTTPDNSFormatLimits.isSuccess(status) else {
            throw HTTPDNSFormatLimits.statusError(status, source: Self.source)
        }
        guard let host = request.hosts.first, request.hosts.count == 1 else {
            throw HTTPDNSError(.invalidConfiguration, "IP list request must name one host", source: Self.source)
        }
        let json = try HTTPDNSJSON.parse(body, source: Self.source)
        guard json.isObject else { throw HTTPDNSError.malformed("answer is not a JSON object", source: Self.source) }
        if let named = json["host"], named != .null {
            guard let text = named.stringValue, HTTPDNSHostPolicy.normalize(text) == host else {
                throw HTTPDNSError(.malformedAnswer, "answer is for another host", host: host, source: Self.source)
            }
        }
        guard let items = json["ips"]?.arrayValue else {
            throw HTTPDNSError(.malformedAnswer, "answer has no ips array", host: host, source: Self.source)
        }
        guard items.count <= 2 * HTTPDNSFormatLimits.maxAddressesPerName else {
            throw HTTPDNSError(.malformedAnswer, "too many addresses", host: host, source: Self.source)
        }
        var set = HTTPDNSRecordSet(host: host)
        for item in items {
            guard let text = item.stringValue else {
                throw HTTPDNSError(.malformedAnswer, "address is not a string", host: host, source: Self.source)
            }
            let address = try HTTPDNSFormatLimits.parseAddress(Substring(text), source: Self.source)
            if address.family == .v4 { set.ipv4.append(address) } else { set.ipv6.append(address) }
        }
        if let ttl = json["ttl"], ttl != .null {
            guard let number = ttl.intValue else {
                throw HTTPDNSError(.malformedAnswer, "ttl is not an integer", host: host, source: Self.source)
            }
            set.ttl = try HTTPDNSFormatLimits.checkTTL(number, source: Self.source)
        }
        guard !set.isEmpty else { throw HTTPDNSError(.noAddress, "empty ips", host: host, source: Self.source) }
        return [set]
    }
}
