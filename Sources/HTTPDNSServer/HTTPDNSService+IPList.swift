import HTTPDNSCore
import HTTPServing

extension HTTPDNSService {
    /// The self-hosted IP list at `/ips?host=…`: `{"ips":[IPv4…, IPv6…],"ttl":N}` (``IPListFormat``).
    ///
    /// Both families always come back (the client picks); a name without addresses answers an empty
    /// list with 200, which clients read as "no address" rather than a broken service.
    func handleIPList(_ request: HTTPServer.Request, _ lookups: HTTPDNSServiceLookups) -> HTTPServer.Response {
        guard let host = request.queryValue("host"), !host.isEmpty, !Self.isRepeated(request, "host") else {
            return Self.badRequest("missing host")
        }
        let name = HTTPDNSHostPolicy.normalize(host)
        guard name.utf8.count <= 253, HTTPDNSHostPolicy.isValidHostName(name), !HTTPDNSIPAddress.isLiteral(name) else {
            return Self.badRequest("not a host name")
        }
        selectView(clientAddress(of: request), lookups)
        let answer = lookup(name, family: .both, clientSubnet: clientSubnet(of: request), lookups)
        switch answer.status {
        case .failed:
            return Self.json(HTTPDNSServiceJSON.object([("error", "\"upstream failed\"")]), status: 502)
        case .nameError:
            return Self.json(HTTPDNSServiceJSON.object([("ips", "[]"), ("ttl", String(answer.ttl))]))
        case .found:
            let ips = HTTPDNSServiceJSON.array(answer.addresses(.both).map(\.description))
            return Self.json(HTTPDNSServiceJSON.object([("ips", ips), ("ttl", String(answer.ttl))]))
        }
    }
}
