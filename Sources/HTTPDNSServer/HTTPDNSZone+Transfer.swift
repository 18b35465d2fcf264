import DNSWire
import DNSZoneTransfer
import HTTPDNSCore
import HTTPDNSFleet

extension HTTPDNSZone {
    /// A zone transferred from a primary, as the service answers it, and what it left out.
    package struct Transferred: Sendable {
        /// The names with A, AAAA or CNAME records, checked by the JSON zone's rules.
        package var zone: HTTPDNSZone
        /// Records of other types (NS, MX, TXT, …), which HTTPDNS answers do not carry, by type.
        package var ignored: [DNSRecordType: Int]
        /// Names of the overlay that the transferred zone does not have (their extras apply to nothing).
        package var unmatchedOverlay: [String]
    }

    /// The HTTPDNS zone of a zone transferred from a primary (issue 24): each owner name's A, AAAA
    /// or CNAME records become its entry, with the smallest TTL of those records (what a resolver
    /// caching the set would keep); the SOA and every other type are left out and counted.
    ///
    /// `overlay` (a JSON zone) adds what DNS zones cannot say: a name in both keeps the transferred
    /// records and takes the overlay's `check` (health checks) and `views` (records per client
    /// network). The result is checked whole, as a JSON zone is, so a zone that breaks a rule
    /// (a CNAME beside addresses, a CNAME loop, too many addresses) is refused and the caller keeps
    /// the old one.
    ///
    /// - Throws: ``HTTPDNSServiceError`` `.invalidZone` naming the zone and the first fault.
    package static func transferred(_ snapshot: DNSZoneSnapshot, overlay: HTTPDNSZone? = nil) throws(HTTPDNSServiceError) -> Transferred {
        var entries: [String: Entry] = [:]
        var ignored: [DNSRecordType: Int] = [:]
        let zoneName = snapshot.zone.text()
        func fail(_ detail: String) -> HTTPDNSServiceError { HTTPDNSServiceError(.invalidZone, "zone \(zoneName): \(detail)") }
        for record in snapshot.records {
            let name = record.name.text().lowercased()
            let ttl = Int(min(record.ttl, UInt32(HTTPDNSFormatLimits.maxTTL)))
            func add(_ change: (inout Entry) -> Void) {
                var entry = entries[name] ?? Entry(ttl: ttl)
                entry.ttl = min(entry.ttl, ttl)
                change(&entry)
                entries[name] = entry
            }
            switch record.data {
            case .a(let bytes):
                guard let address = HTTPDNSIPAddress(bytes: bytes) else { throw fail("\(name): a bad A record") }
                add { $0.ipv4.append(address) }
            case .aaaa(let bytes):
                guard let address = HTTPDNSIPAddress(bytes: bytes) else { throw fail("\(name): a bad AAAA record") }
                add { $0.ipv6.append(address) }
            case .cname(let target):
                guard entries[name]?.cname == nil else { throw fail("\(name): more than one CNAME") }
                add { $0.cname = target.text() }
            default:
                ignored[record.data.type, default: 0] += 1
            }
        }
        var unmatched: [String] = []
        for (name, extra) in overlay?.entries ?? [:] {
            guard var entry = entries[name] else {
                unmatched.append(name)
                continue
            }
            entry.check = extra.check
            entry.views = extra.views
            entries[name] = entry
        }
        do throws(HTTPDNSServiceError) {
            return Transferred(zone: try HTTPDNSZone(entries: entries), ignored: ignored, unmatchedOverlay: unmatched.sorted())
        } catch {
            throw fail(error.detail)
        }
    }

    /// The zone served from the transfers a server follows (``HTTPDNSSecondaryZones``): every
    /// zone's own transfer converted with `overlay` and merged (names of different zones never
    /// collide: a name belongs to the zone whose apex is its closest); then each view's own
    /// transfers, which replace what the zones (and the overlay's views) give that view.
    ///
    /// - Throws: ``HTTPDNSServiceError`` `.invalidZone` when the combination breaks the zone rules.
    package static func combined(_ transfers: [HTTPDNSTransferredZone], overlay: HTTPDNSZone) throws(HTTPDNSServiceError) -> HTTPDNSZone {
        var entries: [String: HTTPDNSZone.Entry] = [:]
        for transfer in transfers where transfer.view == nil {
            let converted = try HTTPDNSZone.transferred(transfer.snapshot, overlay: overlay)
            for (name, entry) in converted.zone.entries where entries[name] == nil { entries[name] = entry }
        }
        for transfer in transfers {
            guard let view = transfer.view else { continue }
            try merge(view: view, of: transfer.snapshot, into: &entries)
        }
        return try HTTPDNSZone(entries: entries)
    }

    /// Makes `snapshot` (a transfer for `view`) that view's whole zone in `entries`.
    private static func merge(view: String, of snapshot: DNSZoneSnapshot, into entries: inout [String: HTTPDNSZone.Entry]) throws(HTTPDNSServiceError) {
        let zoneName = snapshot.zone.text().lowercased()
        func fail(_ detail: String) -> HTTPDNSServiceError {
            HTTPDNSServiceError(.invalidZone, "zone \(zoneName) (view \(view)): \(detail)")
        }
        let viewZone = try HTTPDNSZone.transferred(snapshot).zone
        // The zone's names the view's transfer lacks: none in the view (a CNAME stays, the same for all).
        for (name, entry) in entries where entry.cname == nil && viewZone.entries[name] == nil
            && (name == zoneName || name.hasSuffix("." + zoneName)) {
            entries[name]?.views[view] = HTTPDNSZone.Entry(ttl: entry.ttl)
        }
        for (name, viewEntry) in viewZone.entries {
            if let target = viewEntry.cname {
                guard entries[name]?.cname == target else {
                    throw fail("\(name): a CNAME is the same for every view (the zone's is \(entries[name]?.cname ?? "none"))")
                }
                continue
            }
            var entry = entries[name] ?? HTTPDNSZone.Entry(ttl: viewEntry.ttl)
            guard entry.cname == nil else { throw fail("\(name): a CNAME in the zone, addresses in the view") }
            entry.views[view] = HTTPDNSZone.Entry(ipv4: viewEntry.ipv4, ipv6: viewEntry.ipv6, ttl: viewEntry.ttl)
            entries[name] = entry
        }
    }
}
