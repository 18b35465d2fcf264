import DNSWire
import HTTPDNSCore
import HTTPServing

extension HTTPDNSService {
    /// Google-style JSON DoH (`/dns-query?name=&type=` and `/resolve?name=&type=`): `Status` is the
    /// RCODE, `Answer` holds `name`, `type`, `TTL`, `data` (``DoHJSONFormat``); answers
    /// `application/dns-json` with `cache-control: max-age`.
    func handleDoHJSON(_ request: HTTPServer.Request, _ lookups: HTTPDNSServiceLookups) -> HTTPServer.Response {
        guard let text = request.queryValue("name"), !text.isEmpty, !Self.isRepeated(request, "name") else {
            return Self.badRequest("missing name")
        }
        guard text.utf8.count <= 1024, let name = try? DNSName(text) else { return Self.badRequest("bad name") }
        let type: DNSRecordType
        if let raw = request.queryValue("type") {
            if let number = UInt16(raw), number > 0 {
                type = DNSRecordType(number)
            } else if raw.utf8.count <= 16, let named = DNSRecordType(name: raw) {
                type = named
            } else {
                return Self.badRequest("bad type")
            }
        } else {
            type = .A
        }
        selectView(clientAddress(of: request), lookups)
        let reply = reply(to: DNSQuestion(name: name, type: type), clientSubnet: clientSubnet(of: request), lookups)
        lookups.described(DNSQuestion(name: name, type: type), reply)
        let members: [(String, String)] = [
            ("Status", String(reply.rcode.rawValue)),
            ("TC", "false"), ("RD", "true"), ("RA", "true"), ("AD", "false"), ("CD", "false"),
            ("Question", "[" + HTTPDNSServiceJSON.object([
                ("name", HTTPDNSServiceJSON.string(name.description)), ("type", String(type.rawValue)),
            ]) + "]"),
        ] + [("Answer", reply.answers), ("Authority", reply.authorities)].compactMap { section, records in
            records.isEmpty ? nil : (section, "[" + records.map(Self.jsonRecord).joined(separator: ",") + "]")
        }
        var response = Self.json(HTTPDNSServiceJSON.object(members), contentType: Self.dnsJSONType)
        let maxAge = reply.rcode == .serverFailure ? 0 : reply.maxAge
        response.headers.append(HTTPServer.Header(name: "Cache-Control", value: "max-age=\(maxAge)"))
        return response
    }

    /// `{"name":"…","type":N,"TTL":N,"data":"…"}` with presentation-format data.
    static func jsonRecord(_ record: DNSRecord) -> String {
        let data: String
        switch record.data {
        case .a(let bytes), .aaaa(let bytes): data = HTTPDNSIPAddress(bytes: bytes)?.description ?? ""
        case .cname(let target): data = target.description
        case .soa(let soa):
            data = "\(soa.primaryServer) \(soa.responsible) \(soa.serial) \(soa.refresh) \(soa.retry) \(soa.expire) \(soa.minimum)"
        default: data = ""
        }
        return HTTPDNSServiceJSON.object([
            ("name", HTTPDNSServiceJSON.string(record.name.description)), ("type", String(record.type.rawValue)),
            ("TTL", String(record.ttl)), ("data", HTTPDNSServiceJSON.string(data)),
        ])
    }
}
