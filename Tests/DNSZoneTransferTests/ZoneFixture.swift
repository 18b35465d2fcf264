import DNSWire
import DNSZoneTransfer
import HTTPDNSCore

/// Zones and transfer responses for the AXFR, IXFR and NOTIFY tests.
enum ZoneFixture {
    static let zone = name("example.com")

    static func name(_ text: String) -> DNSName { (try? DNSName(text)) ?? .root }

    static func soa(_ serial: UInt32) -> DNSSOA {
        DNSSOA(primaryServer: name("ns1.example.com"), responsible: name("hostmaster.example.com"),
               serial: serial, refresh: 3600, retry: 600, expire: 86400, minimum: 300)
    }

    static func soaRecord(_ serial: UInt32) -> DNSRecord { DNSRecord(name: zone, ttl: 3600, data: .soa(soa(serial))) }

    static func a(_ owner: String, _ last: UInt8, ttl: UInt32 = 300) -> DNSRecord {
        DNSRecord(name: name(owner), ttl: ttl, data: .a([192, 0, 2, last]))
    }

    /// The zone at serial 1: what an IXFR starts from.
    static func snapshot(serial: UInt32 = 1) -> DNSZoneSnapshot {
        DNSZoneSnapshot(zone: zone, soa: soa(serial), soaTTL: 3600, records: [
            a("www.example.com", 1), a("mail.example.com", 2), DNSRecord(name: zone, ttl: 3600, data: .ns(name("ns1.example.com"))),
        ])
    }

    /// Response messages for `query` carrying `records`, `perMessage` answers each; the question
    /// only in the first message, as Knot and BIND send it.
    static func responses(to query: DNSMessage, _ records: [DNSRecord], perMessage: Int) -> [DNSMessage] {
        stride(from: 0, to: records.count, by: perMessage).enumerated().map { index, start in
            var message = DNSMessage(id: query.id, questions: index == 0 ? query.questions : [],
                                     answers: Array(records[start..<min(start + perMessage, records.count)]))
            message.isResponse = true
            message.isAuthoritative = true
            return message
        }
    }

    /// Feeds `messages` (unsigned, wire size from encoding) and returns every action.
    static func run(_ transfer: inout DNSZoneTransfer, _ messages: [DNSMessage]) -> [DNSZoneTransfer.Action] {
        messages.map { transfer.receive($0, wireSize: ((try? $0.encode()) ?? []).count, signature: .none) }
    }
}

extension DNSZoneTransfer.Action {
    /// The error code of a failure, for assertions.
    var failureCode: DNSZoneTransferError.Code? {
        if case .failed(let error) = self { return error.code }
        return nil
    }

    var result: DNSZoneTransfer.Result? {
        if case .done(let result) = self { return result }
        return nil
    }
}
