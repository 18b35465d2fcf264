import DNSWire
import DNSZoneTransfer
import HTTPDNSCore

extension HTTPDNSFuzzTarget {
    /// TSIG key text: whatever parses is a usable HMAC-SHA256 key with a name and a secret.
    static let tsigKey = HTTPDNSFuzzTarget(
        "tsig-key", "TSIG keys from -y text and BIND key clauses are HMAC-SHA256 with a secret"
    ) { bytes throws(HTTPDNSFuzzFailure) in
        let text = String(decoding: bytes, as: UTF8.self)
        var keys = (try? DNSTSIGKey.parseBINDKeys(text)) ?? []
        if let key = try? DNSTSIGKey(commandLine: text) { keys.append(key) }
        for key in keys {
            try require(!key.secret.isEmpty, "empty secret")
            try require(!key.name.isRoot, "root key name")
            try require(key.algorithm == .hmacSHA256, "algorithm")
        }
    }

    /// Zone transfers: a choice byte (AXFR or IXFR from a one-record zone), then TCP-framed messages
    /// (2-byte length, message). The reader ends at most once, accepts nothing after, and what it
    /// delivers is class IN and inside the zone; TSIG verification of hostile frames only ever fails.
    static let zoneTransfer = HTTPDNSFuzzTarget(
        "zone-transfer", "AXFR/IXFR reader ends once with in-zone IN records; hostile TSIG never verifies"
    ) { bytes throws(HTTPDNSFuzzFailure) in
        var input = FuzzInput(bytes)
        guard let zone = try? DNSName("example.com"), let host = try? DNSName("ns1.example.com"),
              let key = try? DNSTSIGKey(name: host, secret: [1, 2, 3, 4])
        else { return }
        let soa = DNSSOA(primaryServer: host, responsible: host, serial: 1, refresh: 1, retry: 1, expire: 1, minimum: 1)
        let current = DNSZoneSnapshot(zone: zone, soa: soa, soaTTL: 60, records: [
            DNSRecord(name: host, ttl: 60, data: .a([192, 0, 2, 1])),
        ])
        var transfer = input.choice(2) == 0
            ? DNSZoneTransfer(axfr: zone, id: 0x1234) : DNSZoneTransfer(ixfr: current, id: 0x1234)
        var verifier = DNSTSIGStreamVerifier(key: key, requestMAC: Array(repeating: 7, count: 32))
        var frames = input.rest[...]
        var ended = false
        while frames.count >= 2 {
            let length = Int(frames[frames.startIndex]) << 8 | Int(frames[frames.startIndex + 1])
            frames = frames.dropFirst(2)
            let frame = Array(frames.prefix(length))
            frames = frames.dropFirst(length)
            guard let received = try? DNSReceivedMessage(decoding: frame) else { continue }
            try require((try? verifier.verify(received, now: 0)) == nil, "a hostile frame verified")
            let action = transfer.receive(received.message, wireSize: frame.count, signature: .none)
            if ended {
                try require(action.isAlreadyFinished, "accepted a message after the end")
                continue
            }
            switch action {
            case .needMore:
                continue
            case .failed:
                ended = true
            case .done(let result):
                ended = true
                let records: [DNSRecord]
                switch result {
                case .upToDate: records = []
                case .full(let snapshot), .incremental(let snapshot): records = snapshot.records
                }
                try require(records.allSatisfy { $0.recordClass == .IN && $0.name.isSubdomain(of: zone) }, "record out of zone")
            }
        }
    }
}

extension HTTPDNSFuzzTarget {
    /// A secondary's copy on disk (`--secondary-dir`): what loads is a whole zone of example.com
    /// with in-zone IN records, and writes back to bytes that load as the same zone.
    static let zoneCopy = HTTPDNSFuzzTarget(
        "zone-copy", "zone copies on disk load whole zones that write back the same, or nothing"
    ) { bytes throws(HTTPDNSFuzzFailure) in
        guard let zone = try? DNSName("example.com"),
              let snapshot = try? DNSZoneCopy.decode(bytes, zone: zone, limits: .init(maxRecords: 10_000, maxBytes: 1 << 20))
        else { return }
        try require(snapshot.zone == zone, "another zone")
        try require(snapshot.records.allSatisfy { $0.recordClass == .IN && $0.name.isSubdomain(of: zone) }, "record out of zone")
        let again = try? DNSZoneCopy.decode(DNSZoneCopy.encode(snapshot), zone: zone)
        try require(again == snapshot, "does not write back the same zone")
    }
}

extension DNSZoneTransfer.Action {
    fileprivate var isAlreadyFinished: Bool {
        if case .failed(let error) = self { return error.code == .alreadyFinished }
        return false
    }
}
