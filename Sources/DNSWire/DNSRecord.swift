/// One resource record (RFC 1035 §4.1.3).
///
/// ``type`` always equals `data.type`; the initializers keep them in step. For OPT records
/// ``recordClass`` and ``ttl`` mirror the ``DNSEDNS`` value, as on the wire.
package struct DNSRecord: Sendable, Hashable, CustomStringConvertible {
    package var name: DNSName
    package var recordClass: DNSRecordClass
    /// Seconds the record may be cached.
    package var ttl: UInt32
    package var data: DNSRecordData

    /// The record type, taken from ``data``.
    package var type: DNSRecordType { data.type }

    package init(name: DNSName, recordClass: DNSRecordClass = .IN, ttl: UInt32, data: DNSRecordData) {
        self.name = name
        self.recordClass = recordClass
        self.ttl = ttl
        self.data = data
        if case .opt(let edns) = data {
            self.recordClass = DNSRecordClass(edns.recordClass)
            self.ttl = edns.ttl
        }
    }

    /// An OPT pseudo-record for the additional section (owner is the root, RFC 6891 §6.1.2).
    package static func opt(_ edns: DNSEDNS = DNSEDNS()) -> DNSRecord {
        DNSRecord(name: .root, ttl: 0, data: .opt(edns))
    }

    /// `name ttl class type data`, close to dig's layout.
    package var description: String {
        let rdata: String
        switch data {
        case .a(let bytes), .aaaa(let bytes): rdata = Self.addressText(bytes)
        case .cname(let target), .ns(let target), .ptr(let target): rdata = target.description
        case .mx(let preference, let exchange): rdata = "\(preference) \(exchange)"
        case .txt(let strings): rdata = strings.map { "\"\(String(decoding: $0, as: UTF8.self))\"" }.joined(separator: " ")
        case .soa(let soa):
            rdata = "\(soa.primaryServer) \(soa.responsible) \(soa.serial) \(soa.refresh) \(soa.retry) \(soa.expire) \(soa.minimum)"
        case .opt(let edns): rdata = "udp=\(edns.udpPayloadSize) version=\(edns.version) do=\(edns.dnssecOK)"
        case .opaque(_, let bytes): rdata = "\\# \(bytes.count)"
        }
        return "\(name) \(ttl) \(recordClass) \(type) \(rdata)"
    }

    private static func addressText(_ bytes: [UInt8]) -> String {
        if bytes.count == 4 { return bytes.map(String.init).joined(separator: ".") }
        var groups: [String] = []
        var index = 0
        while index + 1 < bytes.count {
            groups.append(String(UInt16(bytes[index]) << 8 | UInt16(bytes[index + 1]), radix: 16))
            index += 2
        }
        return groups.joined(separator: ":")
    }
}
