/// DNS over HTTPS, JSON flavour (Google `/resolve`, Cloudflare `/dns-query` with
/// `accept: application/dns-json`): `GET URL?name=HOST&type=A|AAAA`.
///
/// The answer's `Status` is the DNS RCODE: 0 NOERROR, 3 NXDOMAIN (`.nameNotFound`), anything else
/// (2 SERVFAIL, 5 REFUSED) an error that must not be cached as "no address". Addresses are taken
/// by following the CNAME chain from the question name (RFC 1034 §3.6.2), at most
/// ``HTTPDNSFormatLimits/maxCNAMEChain`` links, never visiting a name twice; the TTL is the
/// smallest along the chain, since the answer is only good while every link is.
package struct DoHJSONFormat: HTTPDNSProviderFormat {
    /// Where to send requests.
    package struct Configuration: Sendable, Hashable {
        /// The JSON endpoint, for example `https://dns.google/resolve` or
        /// `https://cloudflare-dns.com/dns-query`. Default `https://dns.google/resolve`.
        package var url: String = "https://dns.google/resolve"
        /// Extra headers. Default `accept: application/dns-json` (Cloudflare requires it).
        package var headers: [String: String] = ["accept": "application/dns-json"]

        package init(url: String = "https://dns.google/resolve") {
            self.url = url
        }
    }

    /// The configuration.
    package var configuration: Configuration

    package init(configuration: Configuration) {
        self.configuration = configuration
    }

    static let source = "doh-json"

    /// One name per request; the JSON API has no batch form.
    package var maxHostsPerRequest: Int { 1 }

    /// One request for `.ipv4` or `.ipv6`, two (A then AAAA) for `.both`; merge their answers
    /// with ``HTTPDNSRecordSets/merge(_:)``.
    package func requests(for hosts: [String], family: HTTPDNSAddressFamily, now: Int64) throws(HTTPDNSError) -> [HTTPDNSProviderRequest] {
        switch family {
        case .ipv4, .ipv6: return [try request(for: hosts, family: family)]
        case .both, .auto: return [try request(for: hosts, family: .ipv4), try request(for: hosts, family: .ipv6)]
        }
    }

    /// The request for one host and one family (`.both` is `.unsupported`: use ``requests(for:family:now:)``).
    package func request(for hosts: [String], family: HTTPDNSAddressFamily) throws(HTTPDNSError) -> HTTPDNSProviderRequest {
        let names = try HTTPDNSFormatLimits.normalizeHosts(hosts, max: 1, source: Self.source)
        let base = try HTTPDNSURLQuery.checkedBase(configuration.url, source: Self.source)
        let type: String
        switch family {
        case .ipv4: type = "A"
        case .ipv6: type = "AAAA"
        case .both, .auto: throw HTTPDNSError(.unsupported, "one DoH JSON request asks for one type", source: Self.source)
        }
        var query = HTTPDNSURLQuery()
        query.add("name", names[0])
        query.add("type", type)
        return HTTPDNSProviderRequest(url: query.appended(to: base), headers: configuration.headers, hosts: names, family: family)
    }

    package func parse(status: Int, body: [UInt8], for request: HTTPDNSProviderRequest) throws(HTTPDNSError) -> [HTTPDNSRecordSet] {
        guard HTTPDNSFormatLimits.isSuccess(status) else {
            throw HTTPDNSFormatLimits.statusError(status, source: Self.source)
        }
        guard let host = request.hosts.first, request.hosts.count == 1 else {
            throw HTTPDNSError(.invalidConfiguration, "DoH JSON request must name one host", source: Self.source)
        }
        let json = try HTTPDNSJSON.parse(body, source: Self.source)
        guard json.isObject, let rcode = json["Status"]?.intValue else {
            throw HTTPDNSError.malformed("answer has no integer Status", source: Self.source)
        }
        switch rcode {
        case 0: break
        case 3: throw HTTPDNSError(.nameNotFound, "NXDOMAIN", host: host, source: Self.source)
        case 2: throw HTTPDNSError(.httpStatus, "DNS rcode 2 (SERVFAIL)", host: host, source: Self.source)
        default: throw HTTPDNSError(.httpStatus, "DNS rcode \(min(max(rcode, -1), 65_536))", host: host, source: Self.source)
        }
        if let questions = json["Question"], questions != .null {
            try checkQuestion(questions, host: host)
        }
        let records = try Self.records(json["Answer"], host: host)
        let wanted: Int = request.family == .ipv6 ? 28 : 1
        var set = HTTPDNSRecordSet(host: host)
        var current = host
        var visited: Set<String> = [host]
        var chainTTL: Int?
        for _ in 0...HTTPDNSFormatLimits.maxCNAMEChain {
            let here = records.filter { $0.name == current }
            let addresses = here.filter { $0.type == wanted || (request.family == .both && ($0.type == 1 || $0.type == 28)) }
            if !addresses.isEmpty {
                for record in addresses {
                    let address = try HTTPDNSFormatLimits.parseAddress(Substring(record.data), source: Self.source)
                    guard address.family == (record.type == 1 ? .v4 : .v6) else {
                        throw HTTPDNSError(.malformedAnswer, "address does not match its record type", host: host, source: Self.source)
                    }
                    if address.family == .v4 { set.ipv4.append(address) } else { set.ipv6.append(address) }
                    chainTTL = HTTPDNSFormatLimits.minTTL(chainTTL, record.ttl)
                }
                guard set.ipv4.count + set.ipv6.count <= HTTPDNSFormatLimits.maxAddressesPerName else {
                    throw HTTPDNSError(.malformedAnswer, "too many addresses", host: host, source: Self.source)
                }
                set.ttl = chainTTL
                return [set]
            }
            guard let cname = here.first(where: { $0.type == 5 }) else { break }
            let target = HTTPDNSHostPolicy.normalize(cname.data)
            guard HTTPDNSHostPolicy.isValidHostName(target) else {
                throw HTTPDNSError(.malformedAnswer, "CNAME target is not a host name", host: host, source: Self.source)
            }
            guard visited.insert(target).inserted else {
                throw HTTPDNSError(.malformedAnswer, "CNAME loop", host: host, source: Self.source)
            }
            chainTTL = HTTPDNSFormatLimits.minTTL(chainTTL, cname.ttl)
            current = target
        }
        if visited.count > HTTPDNSFormatLimits.maxCNAMEChain {
            throw HTTPDNSError(.malformedAnswer, "CNAME chain too long", host: host, source: Self.source)
        }
        throw HTTPDNSError(.noAddress, "no address records (NODATA)", host: host, source: Self.source)
    }
}

extension DoHJSONFormat {
    struct Record {
        var name: String
        var type: Int
        var ttl: Int?
        var data: String
    }

    private func checkQuestion(_ questions: HTTPDNSJSON, host: String) throws(HTTPDNSError) {
        guard let items = questions.arrayValue, items.count <= 4 else {
            throw HTTPDNSError(.malformedAnswer, "Question is not a short array", host: host, source: Self.source)
        }
        for item in items {
            guard let name = item["name"]?.stringValue, HTTPDNSHostPolicy.normalize(name) == host else {
                throw HTTPDNSError(.malformedAnswer, "answer is for another question", host: host, source: Self.source)
            }
        }
    }

    /// Reads `Answer` into records: `name`, `type`, `TTL`, `data`, with `data` stripped of the
    /// whitespace and the quotes that some servers put around it.
    static func records(_ value: HTTPDNSJSON?, host: String) throws(HTTPDNSError) -> [Record] {
        guard let value, value != .null else { return [] }
        guard let items = value.arrayValue, items.count <= 256 else {
            throw HTTPDNSError(.malformedAnswer, "Answer is not a short array", host: host, source: source)
        }
        var out: [Record] = []
        for item in items {
            guard item.isObject, let name = item["name"]?.stringValue, let type = item["type"]?.intValue,
                  let data = item["data"]?.stringValue, name.utf8.count <= 256, data.utf8.count <= 1024
            else {
                throw HTTPDNSError(.malformedAnswer, "Answer entry lacks name, type or data", host: host, source: source)
            }
            var ttl: Int?
            if let value = item["TTL"], value != .null {
                guard let number = value.intValue else {
                    throw HTTPDNSError(.malformedAnswer, "TTL is not an integer", host: host, source: source)
                }
                ttl = try HTTPDNSFormatLimits.checkTTL(number, source: source)
            }
            var text = HTTPDNSFormatLimits.trimmingSpaces(data.utf8)
            if text.count >= 2, text.first == UInt8(ascii: "\""), text.last == UInt8(ascii: "\"") {
                text = HTTPDNSFormatLimits.trimmingSpaces(text.dropFirst().dropLast())
            }
            // Only ASCII bytes were cut off, so the rest decodes as it was.
            let value = String(decoding: text, as: UTF8.self)
            out.append(Record(name: HTTPDNSHostPolicy.normalize(name), type: type, ttl: ttl, data: value))
        }
        return out
    }
}
