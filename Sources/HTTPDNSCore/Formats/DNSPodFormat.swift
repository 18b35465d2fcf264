/// DNSPod / Tencent Cloud "D+" HTTPDNS: `GET BASE/d?dn=HOST&ttl=1`, plain-text answers.
///
/// Answers (see provider-apis.md): `1.2.3.4;5.6.7.8,120` (addresses, then TTL), optionally
/// `|clientip`; a batch puts one `name.:answer` line per host; `type=addrs` answers
/// `v4ips,ttl-v6ips,ttl`; `0` or an empty body means no address.
///
/// Enterprise accounts encrypt `dn` and the answer (`alg=des|aes`). Our reading of the vendor
/// documentation, which is terse about it:
/// - the account key is text from the console; its UTF-8 bytes are the key material;
/// - DES: ECB, PKCS#7, key = the first 8 bytes of the account key; ciphertext sent as lower-case hex;
/// - AES: CBC, PKCS#7, key = all of the account key's bytes (16, 24 or 32 → AES-128/192/256),
///   random 16-byte IV; sent as `hex(IV) + hex(ciphertext)`, and answers come back the same way.
/// With ``Configuration/token`` (HTTPS mode) nothing is encrypted and `token=` is sent instead.
package struct DNSPodFormat: HTTPDNSProviderFormat {
    /// Encryption of `dn` and the answer.
    package enum Algorithm: String, Sendable, Hashable {
        case des
        case aes
    }

    /// Where to send requests and which credentials to use.
    package struct Configuration: Sendable, Hashable {
        /// Service base URL, without `/d`. Default `http://119.29.29.98` (Tencent's current HTTP
        /// address; `http://119.29.29.29` is the legacy free one, `43.132.55.55` international).
        package var baseURL: String = "http://119.29.29.98"
        /// Account id (`id=`, 1-10000 on Tencent); required with ``algorithm``. Default none.
        package var accountID: String?
        /// Account encryption key as text; required with ``algorithm``. Default none.
        package var key: String?
        /// Encryption of `dn` and answer. Default none (free plain-text service).
        package var algorithm: Algorithm?
        /// HTTPS-mode token (`token=`), used instead of encryption. Default none.
        package var token: String?
        /// Client subnet to resolve for (`ip=`). Default none: the service uses the source address.
        package var clientSubnet: String?
        /// Ask the service to append the client address it saw (`clientip=1`). Default `false`.
        package var requestClientIP: Bool = false
        /// Append `;<now + expiryAnchorSeconds>` to the plaintext `dn` before encrypting, as newer
        /// SDKs do. Only used with ``algorithm``. Default `nil` (not appended).
        package var expiryAnchorSeconds: Int64?
        /// Largest batch. Default 10; Tencent documents no hard limit, long URLs fail on some proxies.
        package var maxBatch: Int = 10

        package init(baseURL: String = "http://119.29.29.98") {
            self.baseURL = baseURL
        }
    }

    /// The configuration.
    package var configuration: Configuration
    /// Supplies IV bytes for AES (`count` bytes); defaults to ``HTTPDNSCrypto/randomBytes(_:)``.
    /// Tests pass a fixed IV so that URLs are repeatable.
    package var randomBytes: @Sendable (Int) throws(HTTPDNSError) -> [UInt8]

    package init(
        configuration: Configuration,
        randomBytes: @escaping @Sendable (Int) throws(HTTPDNSError) -> [UInt8] = HTTPDNSCrypto.randomBytes
    ) {
        self.configuration = configuration
        self.randomBytes = randomBytes
    }

    package var maxHostsPerRequest: Int { max(1, configuration.maxBatch) }

    static let source = "dnspod"

    package func requests(for hosts: [String], family: HTTPDNSAddressFamily, now: Int64) throws(HTTPDNSError) -> [HTTPDNSProviderRequest] {
        [try request(for: hosts, family: family, now: now)]
    }

    /// Builds the one request for `hosts` (a batch when more than one).
    ///
    /// Query order: `dn`, `id`, `alg`, `token`, `ttl=1`, `type`, `ip`, `clientip`.
    package func request(for hosts: [String], family: HTTPDNSAddressFamily, now: Int64) throws(HTTPDNSError) -> HTTPDNSProviderRequest {
        let names = try HTTPDNSFormatLimits.normalizeHosts(hosts, max: maxHostsPerRequest, source: Self.source)
        let base = try HTTPDNSURLQuery.checkedBase(configuration.baseURL, source: Self.source)
        var plainDN = names.joined(separator: ",")
        var query = HTTPDNSURLQuery()
        if let algorithm = configuration.algorithm {
            guard let id = configuration.accountID, !id.isEmpty else {
                throw HTTPDNSError(.invalidConfiguration, "DNSPod encryption needs an account id", source: Self.source)
            }
            if let anchor = configuration.expiryAnchorSeconds {
                plainDN += ";\(now + anchor)"
            }
            query.add("dn", try encrypt(Array(plainDN.utf8), algorithm: algorithm))
            query.add("id", id)
            query.add("alg", algorithm.rawValue)
        } else {
            query.add("dn", plainDN, keep: HTTPDNSURLQuery.listSeparator)
            if let id = configuration.accountID, !id.isEmpty { query.add("id", id) }
        }
        if let token = configuration.token, !token.isEmpty { query.add("token", token) }
        query.add("ttl", "1")
        switch family {
        case .ipv4: break
        case .ipv6: query.add("type", "aaaa")
        case .both, .auto: query.add("type", "addrs")
        }
        if let subnet = configuration.clientSubnet, !subnet.isEmpty { query.add("ip", subnet) }
        if configuration.requestClientIP { query.add("clientip", "1") }
        return HTTPDNSProviderRequest(url: query.appended(to: base + "/d"), hosts: names, family: family)
    }

    package func parse(status: Int, body: [UInt8], for request: HTTPDNSProviderRequest) throws(HTTPDNSError) -> [HTTPDNSRecordSet] {
        guard HTTPDNSFormatLimits.isSuccess(status) else {
            throw HTTPDNSFormatLimits.statusError(status, source: Self.source)
        }
        try HTTPDNSFormatLimits.checkBody(body, source: Self.source)
        var text = body
        if let algorithm = configuration.algorithm {
            let trimmed = HTTPDNSFormatLimits.trimmingSpaces(body, newlines: true)
            // An unencrypted `0` or empty answer is how the service says "no address" even in
            // encrypted mode.
            if !(trimmed.isEmpty || trimmed.elementsEqual("0".utf8)) {
                text = try decrypt(Array(trimmed), algorithm: algorithm)
            }
        }
        return try DNSPodAnswerParser(request: request, source: Self.source).parse(text)
    }
}

extension DNSPodFormat {
    private func keyBytes(for algorithm: Algorithm) throws(HTTPDNSError) -> [UInt8] {
        guard let key = configuration.key, !key.isEmpty else {
            throw HTTPDNSError(.invalidConfiguration, "DNSPod encryption needs the account key", source: Self.source)
        }
        let bytes = Array(key.utf8)
        switch algorithm {
        case .des:
            guard bytes.count >= 8 else {
                throw HTTPDNSError(.invalidConfiguration, "DNSPod DES key needs at least 8 bytes", source: Self.source)
            }
            return Array(bytes.prefix(8))
        case .aes:
            guard [16, 24, 32].contains(bytes.count) else {
                throw HTTPDNSError(.invalidConfiguration, "DNSPod AES key must be 16, 24 or 32 bytes", source: Self.source)
            }
            return bytes
        }
    }

    /// Encrypts a plaintext the way the service expects `dn`: hex, with the IV first for AES.
    package func encrypt(_ plaintext: [UInt8], algorithm: Algorithm) throws(HTTPDNSError) -> String {
        let key = try keyBytes(for: algorithm)
        switch algorithm {
        case .des:
            return HTTPDNSCrypto.hexEncode(try HTTPDNSCrypto.desECBEncrypt(plaintext, key: key))
        case .aes:
            let iv = try randomBytes(16)
            guard iv.count == 16 else { throw HTTPDNSError(.invalidConfiguration, "IV source gave a wrong length", source: Self.source) }
            return HTTPDNSCrypto.hexEncode(iv) + HTTPDNSCrypto.hexEncode(try HTTPDNSCrypto.aesCBCEncrypt(plaintext, key: key, iv: iv))
        }
    }

    /// Decrypts an encrypted answer body (hex text); garbage is `.malformedAnswer`.
    package func decrypt(_ hexText: [UInt8], algorithm: Algorithm) throws(HTTPDNSError) -> [UInt8] {
        let key = try keyBytes(for: algorithm)
        let bytes: [UInt8]
        do {
            bytes = try HTTPDNSCrypto.hexDecode(hexText)
        } catch {
            throw HTTPDNSError.malformed("encrypted DNSPod answer is not hex", source: Self.source)
        }
        switch algorithm {
        case .des:
            return try HTTPDNSCrypto.desECBDecrypt(bytes, key: key)
        case .aes:
            guard bytes.count >= 32 else {
                throw HTTPDNSError.malformed("encrypted DNSPod answer shorter than IV and one block", source: Self.source)
            }
            return try HTTPDNSCrypto.aesCBCDecrypt(Array(bytes[16...]), key: key, iv: Array(bytes[0..<16]))
        }
    }
}
