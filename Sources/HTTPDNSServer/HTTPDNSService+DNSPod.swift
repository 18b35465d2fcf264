import HTTPDNSCore
import HTTPServing

extension HTTPDNSService {
    /// DNSPod "D+" plain text at `/d` (see provider-apis.md and ``DNSPodFormat``).
    ///
    /// `dn=a[,b…]`, `ttl=1` appends `,TTL`, `type=aaaa|addrs`, `clientip=1` appends `|CLIENT`; a batch
    /// answers one `name.:answer` line per name joined by `\n`; `0` means no address. With
    /// `id=…&alg=des|aes` the `dn` value and the answer are encrypted with the account's key (an
    /// appended `;<unix time>` expiry anchor is checked). `ip=` answers for that client's view
    /// (encrypted too in enterprise mode; not an address: 400). Unknown accounts and undecryptable or expired
    /// `dn` values get 401, which clients take as "drop the cached entry".
    func handleDNSPod(_ request: HTTPServer.Request, _ lookups: HTTPDNSServiceLookups) -> HTTPServer.Response {
        guard let dn = request.queryValue("dn"), !dn.isEmpty, !Self.isRepeated(request, "dn") else {
            return Self.badRequest("missing dn")
        }
        guard dn.utf8.count <= 16 * 1024 else { return Self.badRequest("dn too long") }
        let family: HTTPDNSAddressFamily
        switch request.queryValue("type")?.lowercased() {
        case nil, "a": family = .ipv4
        case "aaaa": family = .ipv6
        case "addrs": family = .both
        default: return Self.badRequest("type must be a, aaaa or addrs")
        }
        let withTTL = request.queryValue("ttl") == "1"
        let clientIP = request.queryValue("clientip") == "1" ? clientAddress(of: request)?.description : nil

        var plain = dn
        var cipher: (format: DNSPodFormat, algorithm: DNSPodFormat.Algorithm)?
        if let alg = request.queryValue("alg") {
            guard let algorithm = DNSPodFormat.Algorithm(rawValue: alg.lowercased()) else {
                return Self.badRequest("alg must be des or aes")
            }
            guard let id = request.queryValue("id"), let key = configuration.dnspod.accountKeys[id] else {
                return Self.text("unknown account\n", status: 401)
            }
            var settings = DNSPodFormat.Configuration(baseURL: "http://127.0.0.1")
            settings.accountID = id
            settings.key = key
            settings.algorithm = algorithm
            let format = DNSPodFormat(configuration: settings)
            guard let bytes = try? format.decrypt(Array(dn.utf8), algorithm: algorithm),
                  let text = String(validating: bytes, as: UTF8.self)
            else {
                return Self.text("cannot decrypt dn\n", status: 401)
            }
            plain = text
            // Newer SDKs append `;<unix time + 600>`: an answer to a replayed request is refused.
            if let semicolon = plain.lastIndex(of: ";") {
                guard let expiry = Int64(plain[plain.index(after: semicolon)...]) else {
                    return Self.badRequest("bad expiry anchor in dn")
                }
                guard Double(expiry) >= configuration.clock.now() else { return Self.text("dn expired\n", status: 401) }
                plain = String(plain[..<semicolon])
            }
            cipher = (format, algorithm)
            lookups.encrypted = true
        }
        // `ip=` names the client to answer for (encrypted like `dn` in enterprise mode).
        var ipParameter = request.queryValue("ip")
        guard !Self.isRepeated(request, "ip") else { return Self.badRequest("ip given twice") }
        if let cipher, let ip = ipParameter {
            guard let bytes = try? cipher.format.decrypt(Array(ip.utf8), algorithm: cipher.algorithm),
                  let text = String(validating: bytes, as: UTF8.self)
            else { return Self.text("cannot decrypt ip\n", status: 401) }
            ipParameter = text
        }
        do {
            selectView(try viewClient(of: request, ipParameter: ipParameter), lookups)
        } catch {
            return Self.badRequest("ip is not an IP address")
        }

        let names = plain.split(separator: ",", omittingEmptySubsequences: false).map { HTTPDNSHostPolicy.normalize(String($0)) }
        guard names.count <= max(1, configuration.limits.maxDNSPodBatch) else {
            return Self.badRequest("at most \(configuration.limits.maxDNSPodBatch) names")
        }
        for name in names where !HTTPDNSHostPolicy.isValidHostName(name) || HTTPDNSIPAddress.isLiteral(name) {
            return Self.badRequest("not a host name in dn")
        }
        let batch = names.count > 1
        let subnet = clientSubnet(of: request)
        var lines: [String] = []
        for name in names {
            let answer = lookup(name, family: family, clientSubnet: subnet, lookups)
            if answer.status == .failed, !batch { return Self.text("upstream failed\n", status: 502) }
            var line = Self.dnspodPart(answer.status == .found ? answer.ipv4 : [], family: family, ttl: answer.ttl, withTTL: withTTL)
            if family != .ipv4 {
                let v6 = Self.dnspodPart(answer.status == .found ? answer.ipv6 : [], family: family, ttl: answer.ttl, withTTL: withTTL)
                line = family == .both ? line + "-" + v6 : v6
            }
            if let clientIP { line += "|" + clientIP }
            lines.append(batch ? "\(name).:\(line)" : line)
        }
        let body = lines.joined(separator: "\n")
        guard let cipher else { return Self.text(body) }
        guard let encrypted = try? cipher.format.encrypt(Array(body.utf8), algorithm: cipher.algorithm) else {
            return Self.text("cannot encrypt answer\n", status: 500)
        }
        return Self.text(encrypted)
    }

    /// `ip;ip[,ttl]`, or `0` for none.
    static func dnspodPart(_ addresses: [HTTPDNSIPAddress], family: HTTPDNSAddressFamily, ttl: Int, withTTL: Bool) -> String {
        guard !addresses.isEmpty else { return "0" }
        let list = addresses.map(\.description).joined(separator: ";")
        return withTTL ? "\(list),\(ttl)" : list
    }
}
