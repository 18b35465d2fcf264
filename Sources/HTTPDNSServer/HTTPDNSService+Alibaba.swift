import HTTPDNSCore
import HTTPServing

extension HTTPDNSService {
    /// Alibaba Cloud HTTPDNS legacy JSON at `/{account}/d`, `/{account}/resolve` and their signed
    /// `sign_` forms (see provider-apis.md and ``AlibabaFormat``).
    ///
    /// `host=` one name (`d`) or up to ``Limits/maxAlibabaBatch`` (`resolve`; more is
    /// `400 LimitExceeded`); `query=4|6|4,6` picks the families (default 4); `ip=` answers for that
    /// client's view (`client_ip` stays the requester's address; not an address: `400 InvalidArgument`). Signed endpoints need
    /// `t` (Unix expiry) and `s` = md5hex("HOST-SECRET-t") with the account's secret: a wrong or
    /// missing signature is `403 InvalidSignature`, a past `t` is `403 SignatureExpired`.
    func handleAlibaba(_ request: HTTPServer.Request, account: String, endpoint: String, _ lookups: HTTPDNSServiceLookups) -> HTTPServer.Response {
        guard !account.isEmpty, account.utf8.count <= 64,
              account.utf8.allSatisfy({ Self.isAccountByte($0) })
        else {
            return Self.alibabaError("InvalidAccount", status: 400)
        }
        if let allowed = configuration.alibaba.accounts, !allowed.contains(account) {
            return Self.alibabaError("InvalidAccount", status: 403)
        }
        guard let hostList = request.queryValue("host"), !hostList.isEmpty, !Self.isRepeated(request, "host") else {
            return Self.alibabaError("MissingArgument", status: 400)
        }
        guard hostList.utf8.count <= 4096 else { return Self.alibabaError("InvalidHost", status: 400) }
        let names = hostList.split(separator: ",", omittingEmptySubsequences: false).map { HTTPDNSHostPolicy.normalize(String($0)) }
        let batch = endpoint.hasSuffix("resolve")
        if batch, names.count > max(1, configuration.limits.maxAlibabaBatch) {
            return Self.alibabaError("LimitExceeded", status: 400)
        }
        guard batch || names.count == 1,
              names.allSatisfy({ HTTPDNSHostPolicy.isValidHostName($0) && !HTTPDNSIPAddress.isLiteral($0) })
        else {
            return Self.alibabaError("InvalidHost", status: 400)
        }
        let family: HTTPDNSAddressFamily
        switch request.queryValue("query")?.replacingOccurrences(of: " ", with: "") {
        case nil, "4": family = .ipv4
        case "6": family = .ipv6
        case "4,6", "6,4": family = .both
        default: return Self.alibabaError("InvalidArgument", status: 400)
        }
        if endpoint.hasPrefix("sign_"), let failure = checkAlibabaSignature(request, account: account, hosts: hostList) {
            return failure
        }

        do {
            guard !Self.isRepeated(request, "ip") else { throw ViewClientFault.badParameter }
            selectView(try viewClient(of: request, ipParameter: request.queryValue("ip")), lookups)
        } catch {
            return Self.alibabaError("InvalidArgument", status: 400)
        }
        let clientIP = clientAddress(of: request).map { HTTPDNSServiceJSON.string($0.description) } ?? "\"\""
        let subnet = clientSubnet(of: request)
        let answers = names.map { lookup($0, family: family, clientSubnet: subnet, lookups) }
        if !batch, answers[0].status == .failed { return Self.alibabaError("UpstreamFailed", status: 502) }
        func ips(_ list: [HTTPDNSIPAddress]) -> String { HTTPDNSServiceJSON.array(list.map(\.description)) }
        if !batch {
            let answer = answers[0]
            let found = answer.status == .found
            return Self.json(HTTPDNSServiceJSON.object([
                ("host", HTTPDNSServiceJSON.string(answer.host)),
                ("ips", ips(found ? answer.ipv4 : [])),
                ("ipsv6", ips(found ? answer.ipv6 : [])),
                ("ttl", String(answer.ttl)),
                ("origin_ttl", String(answer.ttl)),
                ("client_ip", clientIP),
            ]))
        }
        var entries: [String] = []
        for answer in answers {
            let found = answer.status == .found
            for (type, list) in [(1, answer.ipv4), (28, answer.ipv6)] where family.includes(type == 1 ? .v4 : .v6) {
                entries.append(HTTPDNSServiceJSON.object([
                    ("host", HTTPDNSServiceJSON.string(answer.host)),
                    ("client_ip", clientIP),
                    ("ips", ips(found ? list : [])),
                    ("type", String(type)),
                    ("ttl", String(answer.ttl)),
                    ("origin_ttl", String(answer.ttl)),
                ]))
            }
        }
        return Self.json("{\"dns\":[" + entries.joined(separator: ",") + "]}")
    }

    /// Nil when the request's `t`/`s` are valid for `account`, else the 403 to send.
    private func checkAlibabaSignature(_ request: HTTPServer.Request, account: String, hosts: String) -> HTTPServer.Response? {
        guard let secret = configuration.alibaba.secrets[account], !secret.isEmpty,
              let tText = request.queryValue("t"), tText.utf8.count <= 19, let expiry = Int64(tText),
              let signature = request.queryValue("s"), signature.utf8.count == 32
        else {
            return Self.alibabaError("InvalidSignature", status: 403)
        }
        let expected = AlibabaFormat.legacySignature(hosts: hosts, secret: secret, expiry: expiry)
        guard Self.constantTimeEqual(Array(signature.lowercased().utf8), Array(expected.utf8)) else {
            return Self.alibabaError("InvalidSignature", status: 403)
        }
        guard Double(expiry) >= configuration.clock.now() else {
            return Self.alibabaError("SignatureExpired", status: 403)
        }
        return nil
    }

    /// `{"code":"…"}` with a status, as the service reports errors.
    static func alibabaError(_ code: String, status: Int) -> HTTPServer.Response {
        json(HTTPDNSServiceJSON.object([("code", HTTPDNSServiceJSON.string(code))]), status: status)
    }

    static func isAccountByte(_ byte: UInt8) -> Bool {
        (byte >= 0x30 && byte <= 0x39) || (byte | 0x20 >= 0x61 && byte | 0x20 <= 0x7a) || byte == 0x2d || byte == 0x5f
    }

    /// Compares without an early exit, so response time does not reveal how much of a guess was right.
    static func constantTimeEqual(_ lhs: [UInt8], _ rhs: [UInt8]) -> Bool {
        guard lhs.count == rhs.count else { return false }
        var difference: UInt8 = 0
        for (a, b) in zip(lhs, rhs) { difference |= a ^ b }
        return difference == 0
    }
}
