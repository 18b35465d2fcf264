import DNSWire
import HTTPDNSCore

/// Static entries in `/etc/hosts` format (`--hosts FILE`), answered before the engine and the
/// upstreams, authoritatively.
///
/// Each line is an IPv4 or IPv6 address then one or more host names; `#` starts a comment; blank
/// lines are skipped (hosts(5)). A name in the table is answered from it alone: A and AAAA with its
/// addresses, NODATA for a family it has none of (it exists, so the other family must not leak to
/// an upstream), and PTR of each address (`in-addr.arpa`, `ip6.arpa`) with the names, first name
/// first. Other types of the name go on as usual. The TTL is ``ttl``: short, so that clients see an
/// edited file soon after the stub reloads it.
package struct DNSStubHosts: Sendable {
    /// TTL of every answer from the table, seconds: 60. systemd-resolved uses 0; 60 keeps a caching
    /// client from asking again for every connection, and an edit still shows within a minute.
    package static let ttl: UInt32 = 60
    /// Longest line accepted, bytes; hosts(5) has no limit, glibc reads lines of any length, but a
    /// longer line here is a wrong file.
    package static let maximumLineLength = 4096

    private struct Addresses: Sendable {
        var v4: [[UInt8]] = []
        var v6: [[UInt8]] = []
    }

    private var names: [DNSName: Addresses] = [:]
    private var pointers: [DNSName: [DNSName]] = [:]

    package init() {}

    /// Parses `text`, the content of the file `source` (for error messages).
    ///
    /// - Throws: ``HTTPDNSError`` `.invalidConfiguration` naming the file and line: an address that
    ///   is not IPv4 or IPv6, a line without a name, a name that is not a host name, a line too long.
    package init(parsing text: String, source: String) throws(HTTPDNSError) {
        // Bytes, not Characters: "\r\n" is one Character, and a CRLF file must split like an LF one.
        let lines = Array(text.utf8).split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false)
        for (index, line) in lines.enumerated() {
            func bad(_ why: String) -> HTTPDNSError {
                HTTPDNSError(.invalidConfiguration, "\(source) line \(index + 1): \(why)")
            }
            guard line.count <= Self.maximumLineLength else { throw bad("longer than \(Self.maximumLineLength) bytes") }
            let content = line.prefix { $0 != UInt8(ascii: "#") }
            let fields = content
                .split(whereSeparator: { $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\t") || $0 == UInt8(ascii: "\r") })
                .map { String(decoding: $0, as: UTF8.self) }
            guard let first = fields.first else { continue }
            guard let address = HTTPDNSIPAddress(first) else { throw bad("'\(first.prefix(64))' is not an IP address") }
            guard fields.count > 1 else { throw bad("no name after the address") }
            var lineNames: [DNSName] = []
            for field in fields.dropFirst() {
                guard let name = try? DNSName(hostName: field) else { throw bad("'\(field.prefix(64))' is not a host name") }
                lineNames.append(name)
            }
            add(address, names: lineNames)
        }
    }

    /// Whether the table has no entry.
    package var isEmpty: Bool { names.isEmpty }

    /// Adds `other`'s entries after this table's (for several `--hosts` files).
    package mutating func merge(_ other: DNSStubHosts) {
        for (name, addresses) in other.names {
            names[name, default: Addresses()].v4.append(contentsOf: addresses.v4.filter { !(names[name]?.v4.contains($0) ?? false) })
            names[name, default: Addresses()].v6.append(contentsOf: addresses.v6.filter { !(names[name]?.v6.contains($0) ?? false) })
        }
        for (pointer, targets) in other.pointers {
            pointers[pointer, default: []].append(contentsOf: targets.filter { !(pointers[pointer]?.contains($0) ?? false) })
        }
    }

    private mutating func add(_ address: HTTPDNSIPAddress, names lineNames: [DNSName]) {
        let bytes = address.bytes
        for name in lineNames {
            var entry = names[name] ?? Addresses()
            if address.family == .v4 {
                if !entry.v4.contains(bytes) { entry.v4.append(bytes) }
            } else if !entry.v6.contains(bytes) {
                entry.v6.append(bytes)
            }
            names[name] = entry
        }
        guard let reverse = Self.reverseName(bytes) else { return }
        for name in lineNames where !(pointers[reverse]?.contains(name) ?? false) {
            pointers[reverse, default: []].append(name)
        }
    }

    /// The table's answer to `question`, or nil when the table does not know the name.
    package func answer(_ question: DNSQuestion) -> DNSStubResponse? {
        guard question.recordClass == .IN else { return nil }
        if let addresses = names[question.name] {
            let records: [DNSRecord]
            switch question.type {
            case .A: records = addresses.v4.map { DNSRecord(name: question.name, ttl: Self.ttl, data: .a($0)) }
            case .AAAA: records = addresses.v6.map { DNSRecord(name: question.name, ttl: Self.ttl, data: .aaaa($0)) }
            default: return nil
            }
            return DNSStubResponse(answers: records)
        }
        if question.type == .PTR, let targets = pointers[question.name] {
            return DNSStubResponse(answers: targets.map { DNSRecord(name: question.name, ttl: Self.ttl, data: .ptr($0)) })
        }
        return nil
    }

    /// `4.3.2.1.in-addr.arpa` for 1.2.3.4 (RFC 1035 §3.5), nibbles under `ip6.arpa` for IPv6
    /// (RFC 3596 §2.5).
    static func reverseName(_ bytes: [UInt8]) -> DNSName? {
        let hex = Array("0123456789abcdef".utf8)
        var labels: [[UInt8]]
        if bytes.count == 4 {
            labels = bytes.reversed().map { Array(String($0).utf8) } + [Array("in-addr".utf8)]
        } else {
            labels = bytes.reversed().flatMap { [[hex[Int($0 & 0x0F)]], [hex[Int($0 >> 4)]]] } + [Array("ip6".utf8)]
        }
        labels.append(Array("arpa".utf8))
        return try? DNSName(labels: labels)
    }
}
