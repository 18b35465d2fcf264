/// Parses DNSPod's plain-text answer body (already decrypted) into record sets.
///
/// Grammar, per line: `[name[.]:] part [- part] [|clientip]`, where `part` is `0` (none) or
/// `ip;ip;…[,ttl]`. With `type=addrs` (family `.both`) the first part is IPv4 and the second IPv6;
/// otherwise there is one part of the requested family. The TTL of a name is the smallest one given.
///
/// Works on the body's bytes (the grammar is ASCII; every answer of every lookup goes through here):
/// strings are made only for names and the client address.
struct DNSPodAnswerParser {
    typealias Bytes = ArraySlice<UInt8>

    let request: HTTPDNSProviderRequest
    let source: String

    /// Most lines accepted (a batch is at most the number of names asked for, plus blank lines).
    static let maxLines = 256

    func parse(_ body: [UInt8]) throws(HTTPDNSError) -> [HTTPDNSRecordSet] {
        try HTTPDNSFormatLimits.checkBody(body, source: source)
        // ASCII is valid UTF-8; anything else is checked in full.
        if body.contains(where: { $0 >= 0x80 }), String(validating: body, as: UTF8.self) == nil {
            throw HTTPDNSError.malformed("DNSPod answer is not UTF-8", source: source)
        }
        let lines = body[...].split(whereSeparator: { $0 == 0x0a || $0 == 0x0d })
            .map { HTTPDNSFormatLimits.trimmingSpaces($0) }
            .filter { !$0.isEmpty }
        guard lines.count <= Self.maxLines else { throw HTTPDNSError.malformed("too many lines", source: source) }
        guard !lines.isEmpty else {
            throw HTTPDNSError(.noAddress, "empty DNSPod answer", host: request.hosts.first, source: source)
        }
        var sets: [HTTPDNSRecordSet] = []
        for line in lines {
            let (name, rest) = try splitName(line)
            let set = try parseLine(rest, host: name)
            guard !sets.contains(where: { $0.host == name }) else {
                throw HTTPDNSError(.malformedAnswer, "name answered twice", host: name, source: source)
            }
            sets.append(set)
        }
        let ordered = request.hosts.compactMap { host in sets.first { $0.host == host } }
        guard ordered.contains(where: { !$0.isEmpty }) else {
            throw HTTPDNSError(.noAddress, "DNSPod answered 0", host: request.hosts.first, source: source)
        }
        return ordered
    }

    /// Separates a `name.:` prefix from the answer. The text before the first `:` is a name only
    /// when it is one of the requested names: anything else (an IPv6 address, a stray name) stays
    /// in the answer and fails there, so an unrequested name can never be taken for a requested one.
    /// `couldBeGroup` is checked on the raw prefix, so `ab.:` still counts as the name `ab`.
    private func splitName(_ line: Bytes) throws(HTTPDNSError) -> (String, Bytes) {
        if let colon = line.firstIndex(of: UInt8(ascii: ":")), colon - line.startIndex <= 254 {
            let prefix = line[..<colon]
            let name = HTTPDNSHostPolicy.normalize(String(decoding: prefix, as: UTF8.self))
            // A bare one-label hex name such as `ab` could be the first group of an IPv6 address;
            // take it as a name only in the dotted `ab.:` form the service writes.
            let couldBeGroup = prefix.count <= 4 && prefix.allSatisfy(Self.isHexDigit)
            if request.hosts.contains(name), !couldBeGroup {
                return (name, line[(colon + 1)...])
            }
        }
        guard request.hosts.count == 1 else {
            throw HTTPDNSError.malformed("batch answer line without a requested name", source: source)
        }
        return (request.hosts[0], line)
    }

    private func parseLine(_ text: Bytes, host: String) throws(HTTPDNSError) -> HTTPDNSRecordSet {
        var answer = text
        var set = HTTPDNSRecordSet(host: host)
        if let bar = answer.firstIndex(of: UInt8(ascii: "|")) {
            let client = answer[(bar + 1)...]
            guard HTTPDNSIPAddress(utf8: client.prefix(64)) != nil else {
                throw HTTPDNSError(.malformedAnswer, "client IP is not an address", host: host, source: source)
            }
            set.clientIP = String(decoding: client, as: UTF8.self)
            answer = answer[..<bar]
        }
        let parts = answer.split(separator: UInt8(ascii: "-"), omittingEmptySubsequences: false)
        switch (request.family, parts.count) {
        case (.both, 2):
            let (v4, ttl4) = try parsePart(parts[0], family: .v4, host: host)
            let (v6, ttl6) = try parsePart(parts[1], family: .v6, host: host)
            set.ipv4 = v4
            set.ipv6 = v6
            set.ttl = HTTPDNSFormatLimits.minTTL(ttl4, ttl6)
        case (.both, 1):
            // Some deployments answer `type=addrs` with a lone `0`, or only the IPv4 part.
            let (v4, ttl) = try parsePart(parts[0], family: .v4, host: host)
            set.ipv4 = v4
            set.ttl = ttl
        case (.ipv4, 1):
            (set.ipv4, set.ttl) = try parsePart(parts[0], family: .v4, host: host)
        case (.ipv6, 1):
            (set.ipv6, set.ttl) = try parsePart(parts[0], family: .v6, host: host)
        default:
            throw HTTPDNSError(.malformedAnswer, "unexpected number of answer parts", host: host, source: source)
        }
        return set
    }

    /// `0` → no addresses; otherwise `ip;ip[,ttl]`, every address of `family`.
    private func parsePart(_ part: Bytes, family: HTTPDNSIPAddress.Family, host: String) throws(HTTPDNSError) -> ([HTTPDNSIPAddress], Int?) {
        let part = HTTPDNSFormatLimits.trimmingSpaces(part)
        if part.isEmpty || part.elementsEqual(CollectionOfOne(UInt8(ascii: "0"))) { return ([], nil) }
        var list = part
        var ttl: Int?
        if let comma = part.lastIndex(of: UInt8(ascii: ",")) {
            ttl = try HTTPDNSFormatLimits.parseTTL(Substring(decoding: part[(comma + 1)...], as: UTF8.self), source: source)
            list = part[..<comma]
        }
        let items = list.split(separator: UInt8(ascii: ";"), omittingEmptySubsequences: false)
        guard items.count <= HTTPDNSFormatLimits.maxAddressesPerName else {
            throw HTTPDNSError(.malformedAnswer, "too many addresses", host: host, source: source)
        }
        var addresses: [HTTPDNSIPAddress] = []
        addresses.reserveCapacity(items.count)
        for item in items {
            guard item.count <= 64, let address = HTTPDNSIPAddress(utf8: item) else {
                throw HTTPDNSError.malformed("not an IP address in answer", source: source)
            }
            guard address.family == family else {
                throw HTTPDNSError(.malformedAnswer, "address of the wrong family", host: host, source: source)
            }
            addresses.append(address)
        }
        return (addresses, ttl)
    }

    private static func isHexDigit(_ byte: UInt8) -> Bool {
        (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x46) || (byte >= 0x61 && byte <= 0x66)
    }
}
