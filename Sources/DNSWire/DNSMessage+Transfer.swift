extension DNSMessage {
    /// OPCODE of a standard query (RFC 1035 §4.1.1).
    package static let queryOpcode: UInt8 = 0
    /// OPCODE of a NOTIFY (RFC 1996 §3.1).
    package static let notifyOpcode: UInt8 = 4

    /// An SOA query for `zone`, as a secondary sends to check the primary's serial (RFC 1034 §4.3.5).
    ///
    /// RD is clear: the question is for the primary's own authoritative data.
    package static func soaQuery(zone: DNSName, id: UInt16) -> DNSMessage {
        makeQuery(name: zone, type: .SOA, id: id, recursionDesired: false)
    }

    /// An AXFR query for `zone` (RFC 5936 §2.1): one question, QTYPE AXFR, RD clear.
    package static func axfrQuery(zone: DNSName, id: UInt16) -> DNSMessage {
        makeQuery(name: zone, type: .AXFR, id: id, recursionDesired: false)
    }

    /// An IXFR query for `zone` (RFC 1995 §3): the secondary's current SOA in the authority section.
    ///
    /// - Parameter current: the SOA the secondary holds; its serial is where the differences start.
    package static func ixfrQuery(zone: DNSName, id: UInt16, current: DNSSOA, ttl: UInt32 = 0) -> DNSMessage {
        var message = makeQuery(name: zone, type: .IXFR, id: id, recursionDesired: false)
        message.authorities = [DNSRecord(name: zone, ttl: ttl, data: .soa(current))]
        return message
    }
}
