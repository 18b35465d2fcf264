extension AlibabaFormat {
    package func parse(status: Int, body: [UInt8], for request: HTTPDNSProviderRequest) throws(HTTPDNSError) -> [HTTPDNSRecordSet] {
        try HTTPDNSFormatLimits.checkBody(body, source: Self.source)
        guard HTTPDNSFormatLimits.isSuccess(status) else {
            // Error bodies name the reason; fall back to the status when the body says nothing.
            if let json = try? HTTPDNSJSON.parse(body, source: Self.source), let code = json["code"]?.stringValue {
                throw Self.error(forCode: code, status: status)
            }
            throw HTTPDNSFormatLimits.statusError(status, source: Self.source)
        }
        let json = try HTTPDNSJSON.parse(body, source: Self.source)
        guard json.isObject else { throw HTTPDNSError.malformed("answer is not a JSON object", source: Self.source) }
        let sets: [HTTPDNSRecordSet]
        if let code = json["code"]?.stringValue, code != "success" {
            throw Self.error(forCode: code, status: status)
        }
        if json["data"] != nil || json["code"] != nil {
            sets = try parseV2(json, request: request)
        } else if let dns = json["dns"] {
            sets = try parseBatch(dns, request: request)
        } else {
            sets = [try parseLegacyEntry(json, request: request, batch: false)]
        }
        let ordered = HTTPDNSRecordSets.merge(sets)
        guard ordered.contains(where: { !$0.isEmpty }) else {
            throw HTTPDNSError(.noAddress, "Alibaba answered no address", host: request.hosts.first, source: Self.source)
        }
        return request.hosts.compactMap { host in ordered.first { $0.host == host } }
    }

    /// Maps an Alibaba error code (`InvalidSignature`, `SignatureExpired`, `LimitExceeded`, …) to a
    /// typed error.
    package static func error(forCode code: String, status: Int) -> HTTPDNSError {
        let shown = String(code.prefix(64))
        switch code {
        case "InvalidSignature", "SignatureExpired", "InvalidAccount", "MissingSignature", "AccountNotExists",
             "InvalidSecret", "Unauthorized", "Forbidden":
            return HTTPDNSError(.unauthorized, shown, source: source)
        case "LimitExceeded", "TooManyHosts":
            return HTTPDNSError(.unsupported, shown, source: source)
        case "InvalidHost":
            return HTTPDNSError(.invalidHost, shown, source: source)
        case "MissingArgument", "InvalidArgument", "MethodNotAllowed", "InvalidDuration":
            return HTTPDNSError(.invalidConfiguration, shown, source: source)
        default:
            if status == 401 || status == 403 { return HTTPDNSError(.unauthorized, shown, source: source) }
            if HTTPDNSFormatLimits.isSuccess(status) { return HTTPDNSError.malformed("unknown code \(shown)", source: source) }
            return HTTPDNSError(.httpStatus, "HTTP \(status) \(shown)", source: source)
        }
    }

    /// `{"host":…, "ips":[…], "ipsv6":[…], "ttl":N, "client_ip":…}` or, in a batch, an entry of
    /// `dns` whose `type` (1 = A, 28 = AAAA) says what `ips` holds.
    private func parseLegacyEntry(_ json: HTTPDNSJSON, request: HTTPDNSProviderRequest, batch: Bool) throws(HTTPDNSError) -> HTTPDNSRecordSet {
        guard json.isObject else { throw HTTPDNSError.malformed("entry is not an object", source: Self.source) }
        let host = try answeredHost(json["host"], request: request, required: batch)
        var set = HTTPDNSRecordSet(host: host)
        var ipsFamily = HTTPDNSIPAddress.Family.v4
        if batch, let type = json["type"] {
            switch type.intValue {
            case 1: ipsFamily = .v4
            case 28: ipsFamily = .v6
            default: throw HTTPDNSError(.malformedAnswer, "unknown record type", host: host, source: Self.source)
            }
        }
        let ips = try Self.addresses(json["ips"], family: ipsFamily, host: host)
        if ipsFamily == .v4 { set.ipv4 = ips } else { set.ipv6 = ips }
        if !batch { set.ipv6 = try Self.addresses(json["ipsv6"], family: .v6, host: host) }
        set.ttl = try Self.ttl(json["ttl"])
        set.clientIP = try Self.clientIP(json["client_ip"])
        return set
    }

    private func parseBatch(_ dns: HTTPDNSJSON, request: HTTPDNSProviderRequest) throws(HTTPDNSError) -> [HTTPDNSRecordSet] {
        guard let entries = dns.arrayValue, entries.count <= 4 * maxHostsPerRequest else {
            throw HTTPDNSError.malformed("`dns` is not a short array", source: Self.source)
        }
        var sets: [HTTPDNSRecordSet] = []
        for entry in entries { sets.append(try parseLegacyEntry(entry, request: request, batch: true)) }
        return sets
    }

    /// `{"code":"success","mode":0|1,"data":{"answers":[{"dn","v4":{ips,ttl},"v6":{ips,ttl}}]}}`.
    private func parseV2(_ json: HTTPDNSJSON, request: HTTPDNSProviderRequest) throws(HTTPDNSError) -> [HTTPDNSRecordSet] {
        guard json["code"]?.stringValue == "success" else {
            throw HTTPDNSError.malformed("v2 answer without code", source: Self.source)
        }
        var data = json["data"] ?? .null
        if let text = data.stringValue {
            guard json["mode"]?.intValue == 1, let key = configuration.encryptionKey else {
                throw HTTPDNSError.malformed("encrypted data without an encryption key", source: Self.source)
            }
            let bytes = try HTTPDNSCrypto.hexDecode(text)
            guard bytes.count >= 32 else { throw HTTPDNSError.malformed("encrypted data too short", source: Self.source) }
            let plain = try HTTPDNSCrypto.aesCBCDecrypt(Array(bytes[16...]), key: key, iv: Array(bytes[0..<16]))
            data = try HTTPDNSJSON.parse(plain, source: Self.source)
        }
        guard let answers = data["answers"]?.arrayValue, answers.count <= 4 * maxHostsPerRequest else {
            throw HTTPDNSError.malformed("v2 answer without an answers array", source: Self.source)
        }
        var sets: [HTTPDNSRecordSet] = []
        for answer in answers {
            guard answer.isObject else { throw HTTPDNSError.malformed("answer is not an object", source: Self.source) }
            let host = try answeredHost(answer["dn"], request: request, required: true)
            var set = HTTPDNSRecordSet(host: host)
            for (field, family) in [("v4", HTTPDNSIPAddress.Family.v4), ("v6", .v6)] {
                guard let part = answer[field], part != .null else { continue }
                guard part.isObject else { throw HTTPDNSError(.malformedAnswer, "\(field) is not an object", host: host, source: Self.source) }
                let ips = try Self.addresses(part["ips"], family: family, host: host)
                if family == .v4 { set.ipv4 = ips } else { set.ipv6 = ips }
                if !ips.isEmpty { set.ttl = HTTPDNSFormatLimits.minTTL(set.ttl, try Self.ttl(part["ttl"])) }
            }
            sets.append(set)
        }
        return sets
    }

    private func answeredHost(_ value: HTTPDNSJSON?, request: HTTPDNSProviderRequest, required: Bool) throws(HTTPDNSError) -> String {
        guard let value, value != .null else {
            guard !required, request.hosts.count == 1 else {
                throw HTTPDNSError.malformed("answer entry without a host", source: Self.source)
            }
            return request.hosts[0]
        }
        guard let text = value.stringValue, text.utf8.count <= 260 else {
            throw HTTPDNSError.malformed("host is not a string", source: Self.source)
        }
        let host = HTTPDNSHostPolicy.normalize(text)
        guard request.hosts.contains(host) else {
            throw HTTPDNSError.malformed("answer for a name that was not asked", source: Self.source)
        }
        return host
    }

    static func addresses(_ value: HTTPDNSJSON?, family: HTTPDNSIPAddress.Family, host: String) throws(HTTPDNSError) -> [HTTPDNSIPAddress] {
        guard let value, value != .null else { return [] }
        guard let items = value.arrayValue, items.count <= HTTPDNSFormatLimits.maxAddressesPerName else {
            throw HTTPDNSError(.malformedAnswer, "address list is not a short array", host: host, source: source)
        }
        var out: [HTTPDNSIPAddress] = []
        for item in items {
            guard let text = item.stringValue else { throw HTTPDNSError(.malformedAnswer, "address is not a string", host: host, source: source) }
            let address = try HTTPDNSFormatLimits.parseAddress(Substring(text), source: source)
            guard address.family == family else {
                throw HTTPDNSError(.malformedAnswer, "address of the wrong family", host: host, source: source)
            }
            out.append(address)
        }
        return out
    }

    static func ttl(_ value: HTTPDNSJSON?) throws(HTTPDNSError) -> Int? {
        guard let value, value != .null else { return nil }
        guard let number = value.intValue else { throw HTTPDNSError.malformed("TTL is not an integer", source: source) }
        return try HTTPDNSFormatLimits.checkTTL(number, source: source)
    }

    static func clientIP(_ value: HTTPDNSJSON?) throws(HTTPDNSError) -> String? {
        guard let value, value != .null else { return nil }
        guard let text = value.stringValue, text.utf8.count <= 64, HTTPDNSIPAddress(text) != nil else {
            throw HTTPDNSError.malformed("client_ip is not an address", source: source)
        }
        return text
    }
}
