import HTTPDNSCore

/// Hosts found blocked, with the block-redirect addresses that reached them (seed 003), kept for
/// the redirect answer's TTL.
///
/// Without it every request to a blocked host walks the dead addresses, LocalDNS and the redirect
/// endpoint again, up to a connect timeout per blackholed address. While an entry lives, requests go
/// straight to its addresses; when it expires (or its addresses fail) the host goes through HTTPDNS
/// again, so an unblocked name returns to its real addresses. A plain value with explicit `now`; the
/// client keeps one behind a lock.
package struct BlockRedirectMemory: Sendable {
    private struct Entry: Sendable {
        var addresses: [HTTPDNSIPAddress]
        var until: Double
        var stored: Double
    }

    /// Most hosts remembered; the oldest entry leaves first.
    static let capacity = 256
    private var entries: [String: Entry] = [:]

    /// The redirect addresses to use for `host` now, or nil.
    package func addresses(for host: String, now: Double) -> [HTTPDNSIPAddress]? {
        guard let entry = entries[host], entry.until > now else { return nil }
        return entry.addresses
    }

    package mutating func remember(_ host: String, addresses: [HTTPDNSIPAddress], ttl: Int, now: Double) {
        guard !addresses.isEmpty, ttl > 0 else { return }
        if entries[host] == nil, entries.count >= Self.capacity {
            let expired = entries.filter { $0.value.until <= now }.map(\.key)
            for key in expired { entries[key] = nil }
            if entries.count >= Self.capacity, let oldest = entries.min(by: { $0.value.stored < $1.value.stored })?.key {
                entries[oldest] = nil
            }
        }
        entries[host] = Entry(addresses: addresses, until: now + Double(ttl), stored: now)
    }

    package mutating func forget(_ host: String) {
        entries[host] = nil
    }
}
