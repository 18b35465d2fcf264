/// Alibaba Cloud HTTPDNS (EMAS): legacy `/{account}/d`, `sign_d`, `resolve` and the v2 `/v2/d` API.
///
/// Requests (see provider-apis.md):
/// - legacy single name: `SERVICE/ACCOUNT/d?host=H[&query=6|4,6][&ip=…]`; signed with a secret:
///   `SERVICE/ACCOUNT/sign_d?host=H…&t=EXPIRY&s=md5hex("H-secret-EXPIRY")`;
/// - legacy batch (2-5 names): `SERVICE/ACCOUNT/resolve?host=a,b…`, signed `sign_resolve` with the
///   same MD5 signature over the comma-joined list (the vendor's batch vector
///   `12a3f6b1b14a46ca813ca6439beb59a4` is md5("www.aliyun.com,www.taobao.com-IAmASecret-1534316400"));
/// - v2: `SERVICE/v2/d?id=ACCOUNT&m=0|1&exp=EXPIRY&v=1.0&dn=…&q=4|6|4,6&s=SIG`, `s` = hex
///   HMAC-SHA256(secret, the `k=v` pairs sorted by key, joined by `&`, values unencoded).
///
/// Encrypted v2 (`m=1`), our reading: `enc` = hex(IV ‖ AES-CBC-PKCS#7(key, `{"dn":"…","q":"…"}`))
/// with a fresh 16-byte IV, and `s` signs id, m, v, exp and enc; when the answer has `"mode":1` its
/// `data` is a hex string of the same IV ‖ ciphertext shape holding the `{"answers":[…]}` object.
package struct AlibabaFormat: HTTPDNSProviderFormat {
    /// Which generation of the API to use.
    package enum API: String, Sendable, Hashable {
        /// `/{account}/d`, `sign_d`, `resolve`, `sign_resolve`.
        case legacy
        /// `/v2/d` with HMAC-SHA256 signatures.
        case v2
    }

    /// Where to send requests and which credentials to use.
    package struct Configuration: Sendable, Hashable {
        /// Service base URL without the account path. Default `http://203.107.1.1`
        /// (`203.107.1.97` and HTTPS work too).
        package var serviceURL: String = "http://203.107.1.1"
        /// The account id, for example `100000`. Required.
        package var accountID: String
        /// The signing secret. Legacy: signs with MD5 when set; v2: required. Default none.
        package var secret: String?
        /// The API generation. Default `.legacy`.
        package var api: API = .legacy
        /// v2 only: encrypt the query (`m=1`) with this AES key (16, 24 or 32 raw bytes; a key the
        /// console shows as hex must be decoded with ``HTTPDNSCrypto/hexDecode(_:)``). Default none (`m=0`).
        package var encryptionKey: [UInt8]?
        /// Client subnet to resolve for (`ip=`). Default none.
        package var clientSubnet: String?
        /// How long a signature stays valid: `t`/`exp` = now + this. Default 600 s, as the SDKs do.
        package var signatureValidity: Int64 = 600
        /// Most names in one request. Default 5, the service's documented limit.
        package var maxBatch: Int = 5

        package init(serviceURL: String = "http://203.107.1.1", accountID: String) {
            self.serviceURL = serviceURL
            self.accountID = accountID
        }
    }

    /// The configuration.
    package var configuration: Configuration
    /// Supplies IV bytes for `m=1`; defaults to ``HTTPDNSCrypto/randomBytes(_:)``.
    package var randomBytes: @Sendable (Int) throws(HTTPDNSError) -> [UInt8]

    package init(
        configuration: Configuration,
        randomBytes: @escaping @Sendable (Int) throws(HTTPDNSError) -> [UInt8] = HTTPDNSCrypto.randomBytes
    ) {
        self.configuration = configuration
        self.randomBytes = randomBytes
    }

    static let source = "alibaba"

    package var maxHostsPerRequest: Int { min(5, max(1, configuration.maxBatch)) }

    package func requests(for hosts: [String], family: HTTPDNSAddressFamily, now: Int64) throws(HTTPDNSError) -> [HTTPDNSProviderRequest] {
        [try request(for: hosts, family: family, now: now)]
    }

    /// Builds the one request for `hosts` (at most five).
    package func request(for hosts: [String], family: HTTPDNSAddressFamily, now: Int64) throws(HTTPDNSError) -> HTTPDNSProviderRequest {
        let names = try HTTPDNSFormatLimits.normalizeHosts(hosts, max: maxHostsPerRequest, source: Self.source)
        let base = try HTTPDNSURLQuery.checkedBase(configuration.serviceURL, source: Self.source)
        let account = configuration.accountID
        guard !account.isEmpty, account.utf8.count <= 64,
              account.utf8.allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || ($0 | 0x20 >= 0x61 && $0 | 0x20 <= 0x7a) || $0 == 0x2d || $0 == 0x5f })
        else {
            throw HTTPDNSError(.invalidConfiguration, "Alibaba account id must be alphanumeric", source: Self.source)
        }
        let url: String
        switch configuration.api {
        case .legacy: url = try legacyURL(base: base, names: names, family: family, now: now)
        case .v2: url = try v2URL(base: base, names: names, family: family, now: now)
        }
        return HTTPDNSProviderRequest(url: url, hosts: names, family: family)
    }

    /// The MD5 signature of the legacy API: lower-case hex of md5("HOSTS-SECRET-EXPIRY").
    package static func legacySignature(hosts: String, secret: String, expiry: Int64) -> String {
        HTTPDNSCrypto.hexEncode(HTTPDNSCrypto.md5(Array("\(hosts)-\(secret)-\(expiry)".utf8)))
    }

    /// The v2 signature: hex HMAC-SHA256(secret, pairs sorted by key as `k=v` joined with `&`).
    package static func v2Signature(parameters: [String: String], secret: String) -> String {
        let text = parameters.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: "&")
        return HTTPDNSCrypto.hexEncode(HTTPDNSCrypto.hmacSHA256(key: Array(secret.utf8), message: Array(text.utf8)))
    }

    /// The `query`/`q` value for a family: `4`, `6` or `4,6`.
    static func familyParameter(_ family: HTTPDNSAddressFamily) -> String {
        switch family {
        case .ipv4: "4"
        case .ipv6: "6"
        case .both, .auto: "4,6"
        }
    }

    private func legacyURL(base: String, names: [String], family: HTTPDNSAddressFamily, now: Int64) throws(HTTPDNSError) -> String {
        let hostList = names.joined(separator: ",")
        let signed = configuration.secret.map { !$0.isEmpty } ?? false
        let endpoint = (signed ? "sign_" : "") + (names.count == 1 ? "d" : "resolve")
        var query = HTTPDNSURLQuery()
        query.add("host", hostList, keep: HTTPDNSURLQuery.listSeparator)
        // IPv4 only is the service default; saying nothing keeps the URL the documented one.
        if family != .ipv4 { query.add("query", Self.familyParameter(family), keep: HTTPDNSURLQuery.listSeparator) }
        if let subnet = configuration.clientSubnet, !subnet.isEmpty { query.add("ip", subnet) }
        if signed, let secret = configuration.secret {
            let expiry = now + configuration.signatureValidity
            query.add("t", String(expiry))
            query.add("s", Self.legacySignature(hosts: hostList, secret: secret, expiry: expiry))
        }
        return query.appended(to: "\(base)/\(configuration.accountID)/\(endpoint)")
    }

    private func v2URL(base: String, names: [String], family: HTTPDNSAddressFamily, now: Int64) throws(HTTPDNSError) -> String {
        guard let secret = configuration.secret, !secret.isEmpty else {
            throw HTTPDNSError(.invalidConfiguration, "Alibaba v2 needs the signing secret", source: Self.source)
        }
        let dn = names.joined(separator: ",")
        let q = Self.familyParameter(family)
        var parameters: [String: String] = [
            "id": configuration.accountID,
            "exp": String(now + configuration.signatureValidity),
            "v": "1.0",
        ]
        let order: [String]
        if let key = configuration.encryptionKey {
            parameters["m"] = "1"
            // Names are validated LDH text and `q` is fixed, so nothing needs JSON escaping.
            let plain = "{\"dn\":\"\(dn)\",\"q\":\"\(q)\"}"
            let iv = try randomBytes(16)
            guard iv.count == 16 else { throw HTTPDNSError(.invalidConfiguration, "IV source gave a wrong length", source: Self.source) }
            let cipher = try HTTPDNSCrypto.aesCBCEncrypt(Array(plain.utf8), key: key, iv: iv)
            parameters["enc"] = HTTPDNSCrypto.hexEncode(iv + cipher)
            order = ["id", "m", "exp", "v", "enc"]
        } else {
            parameters["m"] = "0"
            parameters["dn"] = dn
            parameters["q"] = q
            order = ["id", "m", "exp", "v", "dn", "q"]
        }
        var query = HTTPDNSURLQuery()
        for name in order { query.add(name, parameters[name] ?? "", keep: HTTPDNSURLQuery.listSeparator) }
        query.add("s", Self.v2Signature(parameters: parameters, secret: secret))
        return query.appended(to: "\(base)/v2/d")
    }
}
