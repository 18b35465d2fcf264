import HTTPDNSCore
import HTTPDNSTransport

/// Hosts found blocked, with the block-redirect addresses that reached them (seed 003), kept for
/// the redirect answer's TTL.
///
/// Without it every request to a blocked host walks the dead addresses, LocalDNS and the redirect
/// endpoint again, up to a connect timeout per blackholed address. While an entry lives, requests go
/// straight to its addresses; when it expires (or its addresses fail) the host goes through HTTPDNS
/// again, so an unblocked name returns to its real addresses. A plain value with explicit `now`; the
/// client keeps one behind a lock.
struct BlockRedirectMemory: Sendable {
    private struct Entry: Sendable {
        var addresses: [HTTPDNSIPAddress]
        var until: Double
        var stored: Double
    }

    /// Most hosts remembered; the oldest entry leaves first.
    static let capacity = 256
    private var entries: [String: Entry] = [:]

    /// The redirect addresses to use for `host` now, or nil.
    func addresses(for host: String, now: Double) -> [HTTPDNSIPAddress]? {
        guard let entry = entries[host], entry.until > now else { return nil }
        return entry.addresses
    }

    mutating func remember(_ host: String, addresses: [HTTPDNSIPAddress], ttl: Int, now: Double) {
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

    mutating func forget(_ host: String) {
        entries[host] = nil
    }
}

extension HTTPDNSClient {
    /// Failures that look like a blocked domain (seed 003 names "cannot find host", "cannot connect
    /// to host" and CFNetwork's 310, the HTTPS proxy failing): plus a connect that timed out before
    /// a byte of the request left, which is what a blackholed address looks like.
    static func isBlockSignal(_ error: HTTPTransportError) -> Bool {
        switch error.code {
        case .cannotFindHost, .cannotConnectToHost, .proxyConnectionFailed: true
        case .timedOut: error.requestBytesSent == 0
        default: false
        }
    }

    /// How long a redirect answer with `ttl` (nil: none given) keeps its host redirected: the
    /// engine's cache bounds apply, as to any answer.
    func blockRedirectTTL(_ ttl: Int?) -> Int {
        let policy = engine.configuration.cache.policy
        return min(max(ttl ?? policy.defaultTTL, policy.minimumTTL), policy.maximumTTL)
    }
}
