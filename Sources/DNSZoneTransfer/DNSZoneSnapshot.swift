import DNSWire

/// A whole zone as a secondary holds it: the SOA and every other record.
///
/// What an AXFR delivers and what an IXFR applies its differences to.
package struct DNSZoneSnapshot: Sendable, Hashable {
    /// The zone's apex.
    package var zone: DNSName
    package var soa: DNSSOA
    /// TTL of the SOA record.
    package var soaTTL: UInt32
    /// Every record but the SOA, in the order received (IXFR additions at the end).
    package var records: [DNSRecord]

    package init(zone: DNSName, soa: DNSSOA, soaTTL: UInt32, records: [DNSRecord]) {
        self.zone = zone
        self.soa = soa
        self.soaTTL = soaTTL
        self.records = records
    }

    /// ``soa`` as a record.
    package var soaRecord: DNSRecord { DNSRecord(name: zone, ttl: soaTTL, data: .soa(soa)) }

    package var serial: DNSSerial { soa.serialNumber }
}

/// The records of a zone being built, with constant-time lookup for IXFR deletions.
///
/// Records are identified by owner (case-insensitive), class and RDATA; the TTL is not part of the
/// identity, so a deletion matches whatever TTL the zone held (as BIND and Knot apply journals)
/// and re-adding a record replaces its TTL.
struct DNSZoneRecordSet: Sendable {
    private struct Key: Hashable, Sendable {
        var name: DNSName
        var recordClass: DNSRecordClass
        var data: DNSRecordData
    }

    private var slots: [DNSRecord?] = []
    private var index: [Key: Int] = [:]

    init(_ records: [DNSRecord] = []) {
        for record in records { insert(record) }
    }

    var count: Int { index.count }

    /// Adds `record`, replacing an equal one (same owner, class and data).
    mutating func insert(_ record: DNSRecord) {
        let key = Key(name: record.name, recordClass: record.recordClass, data: record.data)
        if let slot = index[key] {
            slots[slot] = record
        } else {
            index[key] = slots.count
            slots.append(record)
        }
    }

    /// Removes the record equal to `record`; false when there is none.
    mutating func remove(_ record: DNSRecord) -> Bool {
        let key = Key(name: record.name, recordClass: record.recordClass, data: record.data)
        guard let slot = index.removeValue(forKey: key) else { return false }
        slots[slot] = nil
        return true
    }

    var records: [DNSRecord] { slots.compactMap { $0 } }
}
