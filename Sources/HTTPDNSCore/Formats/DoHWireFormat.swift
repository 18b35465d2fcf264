import DNSWire
import Foundation

/// DNS over HTTPS in the RFC 8484 wire format: a DNS message with ID 0, sent as
/// `GET URL?dns=<base64url, no padding>` or POSTed raw with `content-type: application/dns-message`.
///
/// The answer must be `application/dns-message` (captive portals answer HTML with 200; the transport
/// shell checks the type) and at most 64 KiB. Addresses are found by following the CNAME chain from
/// the question name; the TTL is the smallest along the chain (RFC 8484 §5.1). NXDOMAIN is
/// `.nameNotFound`; SERVFAIL and other codes travel as HTTP 200 and become `.malformedAnswer`-free
/// provider errors (`.transport`), never a cached "no address".
package struct DoHWireFormat: HTTPDNSProviderFormat {
    /// How queries are sent.
    package enum Method: String, Sendable, Hashable {
        /// `GET ?dns=` (cache-friendly). The default.
        case get
        /// `POST` with the message as body.
        case post
    }

    /// The media type of requests and answers.
    package static let contentType = "application/dns-message"

    /// The endpoint, for example `https://dns.example/dns-query`.
    package var url: String
    /// GET or POST. Default GET.
    package var method: Method

    package init(url: String, method: Method = .get) {
        self.url = url
        self.method = method
    }

    static let source = "doh"

    /// One question per DNS message: one name per request.
    package var maxHostsPerRequest: Int { 1 }

    /// One request for `.ipv4`/`.ipv6`, two (A, AAAA) for `.both`.
    package func requests(for hosts: [String], family: HTTPDNSAddressFamily, now: Int64) throws(HTTPDNSError) -> [HTTPDNSProviderRequest] {
        switch family {
        case .ipv4, .ipv6: [try request(for: hosts, family: family)]
        case .both, .auto: [try request(for: hosts, family: .ipv4), try request(for: hosts, family: .ipv6)]
        }
    }

    func request(for hosts: [String], family: HTTPDNSAddressFamily) throws(HTTPDNSError) -> HTTPDNSProviderRequest {
        let names = try HTTPDNSFormatLimits.normalizeHosts(hosts, max: 1, source: Self.source)
        let base = try HTTPDNSURLQuery.checkedBase(url, source: Self.source)
        let message = Self.query(host: names[0], type: family == .ipv6 ? .AAAA : .A, clientSubnet: HTTPDNSClientSubnet.current)
        switch method {
        case .get:
            var query = HTTPDNSURLQuery()
            query.add("dns", Self.base64URL(message))
            return HTTPDNSProviderRequest(
                url: query.appended(to: base), headers: ["accept": Self.contentType], hosts: names, family: family)
        case .post:
            return HTTPDNSProviderRequest(
                url: base, method: "POST",
                headers: ["accept": Self.contentType, "content-type": Self.contentType],
                body: message, hosts: names, family: family)
        }
    }

    /// The query for `host` (ID 0, RD, one question, class IN), written straight from the name's
    /// bytes: `host` is a checked host name (``HTTPDNSFormatLimits/normalizeHosts(_:max:source:)``:
    /// letters, digits, `-` and `_` in labels of 1 to 63 bytes, at most 253 in all), so its text is
    /// its labels. Same bytes as ``DNSMessage/query(name:type:id:recursionDesired:edns:)``.
    ///
    /// With `clientSubnet` (a server answering for a client), an OPT record (UDP size 1232) carries
    /// its EDNS Client Subnet option (RFC 7871 §6).
    static func query(host: String, type: DNSRecordType, clientSubnet: HTTPDNSClientSubnet? = nil) -> [UInt8] {
        let name = host.utf8
        var out: [UInt8] = [0, 0, 0x01, 0, 0, 1, 0, 0, 0, 0, 0, 0]
        out.reserveCapacity(12 + name.count + 6)
        var lengthAt = out.count
        out.append(0)
        for byte in name {
            if byte == UInt8(ascii: ".") {
                lengthAt = out.count
                out.append(0)
            } else {
                out.append(byte)
                out[lengthAt] += 1
            }
        }
        out += [0, UInt8(type.rawValue >> 8), UInt8(type.rawValue & 0xff), 0, 1]
        if let clientSubnet {
            let option = clientSubnet.option
            out[11] = 1  // ARCOUNT
            out += [0, 0, 41, 0x04, 0xd0, 0, 0, 0, 0, UInt8(option.count >> 8), UInt8(option.count & 0xff)] + option
        }
        return out
    }

    /// Whether `name` is `host` (a checked host name), ASCII case aside.
    static func name(_ name: DNSName, is host: String) -> Bool {
        var hostBytes = host.utf8.makeIterator()
        for (index, label) in name.labels.enumerated() {
            if index > 0, hostBytes.next() != UInt8(ascii: ".") { return false }
            for byte in label {
                // A dot inside a label (`\.` in text) is not the host's label separator.
                guard byte != UInt8(ascii: "."), let other = hostBytes.next() else { return false }
                guard HTTPDNSASCII.lowercased(byte) == HTTPDNSASCII.lowercased(other) else { return false }
            }
        }
        return hostBytes.next() == nil
    }

    package func parse(status: Int, body: [UInt8], for request: HTTPDNSProviderRequest) throws(HTTPDNSError) -> [HTTPDNSRecordSet] {
        let source = Self.source
        guard (200..<300).contains(status) else {
            if status == 401 || status == 403 {
                throw HTTPDNSError(.unauthorized, "HTTP \(status)", source: source)
            }
            throw HTTPDNSError(.httpStatus, "HTTP \(status)", source: source)
        }
        try HTTPDNSFormatLimits.checkBody(body, source: source)
        guard let host = request.hosts.first else {
            throw HTTPDNSError(.invalidConfiguration, "request without a host", source: source)
        }
        let message: DNSMessage
        do {
            message = try DNSMessage(decoding: body)
        } catch {
            throw HTTPDNSError.malformed("not a DNS message: \(error)", source: source)
        }
        let type: DNSRecordType = request.family == .ipv6 ? .AAAA : .A
        guard message.isResponse, message.questions.count == 1,
              let question = message.questions.first, question.type == type,
              Self.name(question.name, is: host)
        else {
            throw HTTPDNSError.malformed("answer does not match the question", source: source)
        }
        switch message.rcode {
        case .noError:
            break
        case .nameError:
            throw HTTPDNSError(.nameNotFound, "NXDOMAIN", host: host, source: source)
        default:
            throw HTTPDNSError(.transport, "DNS rcode \(message.rcode)", host: host, source: source)
        }
        let found = message.addresses(for: question.name)
        var set = HTTPDNSRecordSet(host: host)
        for bytes in found.addresses.prefix(HTTPDNSFormatLimits.maxAddressesPerName) {
            guard let address = HTTPDNSIPAddress(bytes: bytes) else { continue }
            if address.family == .v4, type == .A { set.ipv4.append(address) }
            if address.family == .v6, type == .AAAA { set.ipv6.append(address) }
        }
        guard !set.isEmpty else {
            throw HTTPDNSError(.noAddress, "no \(type) record", host: host, source: source)
        }
        set.ttl = found.ttl.map { Int($0) }
        // RFC 2181 §8: a TTL with the top bit set is read as zero, and the chain's TTL is its
        // smallest, so one such record along the chain makes the whole answer's TTL 0.
        // (The chain's names are gathered only when some record has such a TTL: most have none.)
        let maxTTL = UInt32(HTTPDNSFormatLimits.maxTTL)
        if message.answers.contains(where: { $0.ttl > maxTTL }) {
            let chain = Set([question.name] + found.aliases)
            if message.answers.contains(where: { $0.ttl > maxTTL && chain.contains($0.name) }) { set.ttl = 0 }
        }
        return [set]
    }

    /// base64url without padding (RFC 4648 §5, RFC 8484 §4.1).
    // Written out (RFC 4648 §5, no padding) rather than through Foundation's standard alphabet and a
    // second pass: every GET lookup encodes one message.
    package static func base64URL(_ bytes: [UInt8]) -> String {
        var out: [UInt8] = []
        out.reserveCapacity((bytes.count * 4 + 2) / 3)
        var index = 0
        while index + 3 <= bytes.count {
            let chunk = UInt32(bytes[index]) << 16 | UInt32(bytes[index + 1]) << 8 | UInt32(bytes[index + 2])
            for shift in [18, 12, 6, 0] { out.append(base64URLAlphabet[Int(chunk >> UInt32(shift) & 0x3f)]) }
            index += 3
        }
        let rest = bytes.count - index
        if rest > 0 {
            let chunk = UInt32(bytes[index]) << 16 | (rest == 2 ? UInt32(bytes[index + 1]) << 8 : 0)
            for shift in [18, 12, 6].prefix(rest + 1) { out.append(base64URLAlphabet[Int(chunk >> UInt32(shift) & 0x3f)]) }
        }
        return String(decoding: out, as: UTF8.self)
    }

    private static let base64URLAlphabet: [UInt8] = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
}
