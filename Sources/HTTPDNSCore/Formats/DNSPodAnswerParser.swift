/// Parses DNSPod's plain-text answer body (already decrypted) into record sets.
///
/// Grammar, per line: `[name[.]:] part [- part] [|clientip]`, where `part` is `0` (none) or
/// `ip;ip;…[,ttl]`. With `type=addrs` (family `.both`) the first part is IPv4 and the second IPv6;
/// otherwise there is one part of the requested family. The TTL of a name is the smallest one given.
struct DNSPodAnswerParser {
    let request: HTTPDNSProviderRequest
    let source: String

    /// Most lines accepted (a batch is at most the number of names asked for, plus blank lines).
    static let maxLines = 256

    func parse(_ body: [UInt8]) throws(HTTPDNSError) -> [HTTPDNSRecordSet] {
        try HTTPDNSFormatLimits.checkBody(body, source: source)
        guard let text = String(validating: body, as: UTF8.self) else {
            throw HTTPDNSError.malformed("DNSPod answer is not UTF-8", source: source)
        }
        let lines = text.split(whereSeparator: { $0 == "\n" || $0 == "\r\n" || $0 == "\r" })
            .map { $0.trimmingASCIISpaces() }
            .filter { !$0.isEmpty }
        guard lines.count <= Self.maxLines else { throw HTTPDNSError.malformed("too many lines", source: source) }
        guard !lines.isEmpty else {
            throw HTTPDNSError(.noAddress, "empty DNSPod answer", host: request.hosts.first, source: source)
        }
        var byHost: [String: HTTPDNSRecordSet] = [:]
        for line in lines {
            let (name, rest) = try splitName(line)
            let set = try parseLine(rest, host: name)
            guard byHost[name] == nil else { throw HTTPDNSError(.malformedAnswer, "name answered twice", host: name, source: source) }
            byHost[name] = set
        }
        let sets = request.hosts.compactMap { byHost[$0] }
        guard sets.contains(where: { !$0.isEmpty }) else {
            throw HTTPDNSError(.noAddress, "DNSPod answered 0", host: request.hosts.first, source: source)
        }
        return sets
    }

    /// Separates a `name.:` prefix from the answer. The text before the first `:` is a name only
    /// when it is one of the requested names: anything else (an IPv6 address, a stray name) stays
    /// in the answer and fails there, so an unrequested name can never be taken for a requested one.
    /// `couldBeGroup` is checked on the raw prefix, so `ab.:` still counts as the name `ab`.
    private func splitName(_ line: Substring) throws(HTTPDNSError) -> (String, Substring) {
        if let colon = line.firstIndex(of: ":"), line.distance(from: line.startIndex, to: colon) <= 254 {
            let prefix = line[..<colon]
            let name = HTTPDNSHostPolicy.normalize(String(prefix))
            // A bare one-label hex name such as `ab` could be the first group of an IPv6 address;
            // take it as a name only in the dotted `ab.:` form the service writes.
            let couldBeGroup = prefix.count <= 4 && prefix.allSatisfy(\.isHexDigit)
            if request.hosts.contains(name), !couldBeGroup {
                return (name, line[line.index(after: colon)...])
            }
        }
        guard request.hosts.count == 1 else {
            throw HTTPDNSError.malformed("batch answer line without a requested name", source: source)
        }
        return (request.hosts[0], line)
    }

    private func parseLine(_ text: Substring, host: String) throws(HTTPDNSError) -> HTTPDNSRecordSet {
        var answer = text
        var set = HTTPDNSRecordSet(host: host)
        if let bar = answer.firstIndex(of: "|") {
            let client = answer[answer.index(after: bar)...]
            guard IPAddress(String(client.prefix(64))) != nil else {
                throw HTTPDNSError(.malformedAnswer, "client IP is not an address", host: host, source: source)
            }
            set.clientIP = String(client)
            answer = answer[..<bar]
        }
        let parts = answer.split(separator: "-", omittingEmptySubsequences: false)
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
    private func parsePart(_ part: Substring, family: IPAddress.Family, host: String) throws(HTTPDNSError) -> ([IPAddress], Int?) {
        let part = part.trimmingASCIISpaces()
        if part == "0" || part.isEmpty { return ([], nil) }
        var list = part
        var ttl: Int?
        if let comma = part.lastIndex(of: ",") {
            ttl = try HTTPDNSFormatLimits.parseTTL(part[part.index(after: comma)...], source: source)
            list = part[..<comma]
        }
        let items = list.split(separator: ";", omittingEmptySubsequences: false)
        guard items.count <= HTTPDNSFormatLimits.maxAddressesPerName else {
            throw HTTPDNSError(.malformedAnswer, "too many addresses", host: host, source: source)
        }
        var addresses: [IPAddress] = []
        for item in items {
            let address = try HTTPDNSFormatLimits.parseAddress(item, source: source)
            guard address.family == family else {
                throw HTTPDNSError(.malformedAnswer, "address of the wrong family", host: host, source: source)
            }
            addresses.append(address)
        }
        return (addresses, ttl)
    }
}

extension Substring {
    /// Drops ASCII spaces and tabs at both ends.
    func trimmingASCIISpaces() -> Substring {
        var slice = self
        while let first = slice.first, first == " " || first == "\t" { slice = slice.dropFirst() }
        while let last = slice.last, last == " " || last == "\t" { slice = slice.dropLast() }
        return slice
    }
}
