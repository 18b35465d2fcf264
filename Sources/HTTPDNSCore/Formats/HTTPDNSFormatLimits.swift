/// Bounds and small validators every format shares, so that hostile answers fail the same way.
package enum HTTPDNSFormatLimits {
    /// Largest answer body accepted (64 KiB, the DoH message limit of RFC 8484).
    package static let maxBodyBytes = 65_536
    /// Largest number of addresses accepted for one name in one family.
    package static let maxAddressesPerName = 64
    /// Largest TTL accepted: 2^31 - 1 seconds (RFC 2181 §8); larger values are a malformed answer.
    package static let maxTTL = Int(Int32.max)
    /// Longest CNAME chain followed in a DoH answer.
    package static let maxCNAMEChain = 16

    /// The smaller of two optional TTLs; `nil` only when both are unknown.
    static func minTTL(_ a: Int?, _ b: Int?) -> Int? {
        switch (a, b) {
        case let (a?, b?): min(a, b)
        case let (a?, nil): a
        case let (nil, b?): b
        case (nil, nil): nil
        }
    }

    /// Rejects bodies over ``maxBodyBytes``.
    static func checkBody(_ body: [UInt8], source: String) throws(HTTPDNSError) {
        guard body.count <= maxBodyBytes else {
            throw HTTPDNSError.malformed("answer body of \(body.count) bytes exceeds \(maxBodyBytes)", source: source)
        }
    }

    /// Parses a decimal TTL: digits only, no sign, at most ``maxTTL``.
    static func parseTTL(_ text: Substring, source: String) throws(HTTPDNSError) -> Int {
        guard !text.isEmpty, text.utf8.count <= 10, text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
              let value = Int(text), value <= maxTTL
        else {
            throw HTTPDNSError.malformed("bad TTL", source: source)
        }
        return value
    }

    /// Checks a TTL that arrived as a JSON integer.
    static func checkTTL(_ value: Int, source: String) throws(HTTPDNSError) -> Int {
        guard value >= 0, value <= maxTTL else { throw HTTPDNSError.malformed("TTL out of range", source: source) }
        return value
    }

    /// Parses one address literal from an answer; junk is a malformed answer, never skipped.
    static func parseAddress(_ text: Substring, source: String) throws(HTTPDNSError) -> HTTPDNSIPAddress {
        guard text.utf8.count <= 64, let address = HTTPDNSIPAddress(String(text)) else {
            throw HTTPDNSError.malformed("not an IP address in answer", source: source)
        }
        return address
    }

    /// Normalises and validates the hosts of a request.
    static func normalizeHosts(_ hosts: [String], max: Int, source: String) throws(HTTPDNSError) -> [String] {
        guard !hosts.isEmpty else { throw HTTPDNSError(.invalidHost, "no host to resolve", source: source) }
        guard hosts.count <= max else {
            throw HTTPDNSError(.unsupported, "\(hosts.count) hosts in one request, at most \(max)", source: source)
        }
        var out: [String] = []
        for host in hosts {
            guard host.utf8.count <= 254, HTTPDNSHostPolicy.isValidHostName(host), !HTTPDNSIPAddress.isLiteral(host) else {
                throw HTTPDNSError(.invalidHost, "not a valid host name", host: String(host.prefix(64)), source: source)
            }
            out.append(HTTPDNSHostPolicy.normalize(host))
        }
        return out
    }

    /// `bytes` without ASCII spaces and tabs at either end (with `newlines`, CR and LF as well).
    static func trimmingSpaces<Bytes: BidirectionalCollection<UInt8>>(_ bytes: Bytes, newlines: Bool = false) -> Bytes.SubSequence {
        func isSpace(_ byte: UInt8) -> Bool {
            byte == 0x20 || byte == 0x09 || (newlines && (byte == 0x0a || byte == 0x0d))
        }
        var slice = bytes[...]
        while let first = slice.first, isSpace(first) { slice = slice.dropFirst() }
        while let last = slice.last, isSpace(last) { slice = slice.dropLast() }
        return slice
    }

    /// Maps a non-2xx HTTP status to the error every format uses for it.
    static func statusError(_ status: Int, source: String) -> HTTPDNSError {
        if status == 401 || status == 403 {
            return HTTPDNSError(.unauthorized, "HTTP \(status)", source: source)
        }
        return HTTPDNSError(.httpStatus, "HTTP \(status)", source: source)
    }

    /// Whether `status` is a success.
    static func isSuccess(_ status: Int) -> Bool { (200...299).contains(status) }
}
