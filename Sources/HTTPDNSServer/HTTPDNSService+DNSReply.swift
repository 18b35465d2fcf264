import DNSWire
import HTTPDNSCore

/// The DNS-level answer to one question, shared by the wire and the JSON DoH flavours.
struct HTTPDNSServiceReply {
    var rcode: DNSResponseCode
    var authoritative: Bool
    var answers: [DNSRecord] = []
    var authorities: [DNSRecord] = []
    /// The question's name as text (`DNSName.text()`), made once for the lookup and the access log.
    var name: String = ""

    /// How long the reply may be cached: the smallest answer TTL, else the SOA's negative TTL
    /// (RFC 2308 §5), else 0 (RFC 8484 §5.1).
    var maxAge: UInt32 {
        if let smallest = answers.lazy.map(\.ttl).min() { return smallest }
        for record in authorities {
            if case .soa(let soa) = record.data { return min(record.ttl, soa.minimum) }
        }
        return 0
    }
}

extension HTTPDNSService {
    /// Answers `question`: A and AAAA from the zone or upstream, CNAMEs of the zone, NODATA for
    /// every other type (with the zone's SOA when the name lies in it), NXDOMAIN for unknown names.
    func reply(to question: DNSQuestion, clientSubnet: HTTPDNSClientSubnet? = nil, _ lookups: HTTPDNSServiceLookups) -> HTTPDNSServiceReply {
        // Names with bytes a host name cannot hold are escaped by `text()` and so match nothing.
        let host = question.name.text(trailingDot: false)
        guard question.recordClass == .IN else { return HTTPDNSServiceReply(rcode: .refused, authoritative: false, name: host) }
        let type = question.type
        let family: HTTPDNSAddressFamily
        switch type {
        case .A: family = .ipv4
        case .AAAA: family = .ipv6
        default: family = .both  // to learn whether the name exists
        }
        let answer = question.name.isRoot
            ? HTTPDNSServiceAnswer(status: .nameError, host: ".", ttl: 0, authoritative: false)
            : lookup(host, family: family, clientSubnet: clientSubnet, lookups)
        var reply = HTTPDNSServiceReply(rcode: .noError, authoritative: answer.authoritative, name: host)
        switch answer.status {
        case .failed:
            return HTTPDNSServiceReply(rcode: .serverFailure, authoritative: false, name: host)
        case .nameError:
            reply.rcode = .nameError
        case .found:
            var owner = question.name
            for alias in answer.aliases {
                guard let target = try? DNSName(alias.target) else { break }
                if type == .A || type == .AAAA || type == .ANY || (type == .CNAME && owner == question.name) {
                    reply.answers.append(DNSRecord(name: owner, ttl: UInt32(clamping: alias.ttl), data: .cname(target)))
                }
                owner = target
            }
            if type == .A || type == .AAAA || type == .ANY {
                let ttl = UInt32(clamping: answer.addressTTL)
                reply.answers.reserveCapacity(reply.answers.count + answer.ipv4.count + answer.ipv6.count)
                for address in answer.ipv4 { reply.answers.append(DNSRecord(name: owner, ttl: ttl, data: .a(address.bytes))) }
                for address in answer.ipv6 { reply.answers.append(DNSRecord(name: owner, ttl: ttl, data: .aaaa(address.bytes))) }
            }
        }
        // The SOA only matters for a negative answer: the apex is looked for then.
        if reply.answers.isEmpty, let apex = answer.apex ?? (answer.authoritative ? lookups.zone.apex(for: host) : nil),
           let soa = soaRecord(apex) {
            reply.authorities.append(soa)
        }
        return reply
    }

    /// A synthetic SOA for `apex`, so that resolvers can cache negative answers (RFC 2308).
    func soaRecord(_ apex: String) -> DNSRecord? {
        guard let owner = try? DNSName(apex), let primary = try? DNSName("ns." + apex),
              let responsible = try? DNSName("hostmaster." + apex)
        else { return nil }
        let negative = UInt32(clamping: max(0, configuration.limits.negativeTTL))
        let soa = DNSSOA(
            primaryServer: primary, responsible: responsible, serial: 1, refresh: 3_600, retry: 600, expire: 86_400,
            minimum: negative)
        return DNSRecord(name: owner, ttl: negative, data: .soa(soa))
    }
}
