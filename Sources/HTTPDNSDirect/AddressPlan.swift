import HTTPDNSCore

/// The addresses still to try for one request, in order, without repeats.
package struct AddressPlan {
    package init() {}

    private var queue: [HTTPDNSIPAddress] = []
    private var tried = Set<HTTPDNSIPAddress>()
    /// The host, normalised (the key of the sticky block redirect).
    package var host = ""
    /// The engine protects the host (pinning, LocalDNS and the block redirect apply).
    package var protected = false
    /// The queue holds remembered block-redirect addresses.
    package var sticky = false
    /// The proxy an unpinned attempt goes through.
    package var proxy: String?
    /// The block-redirect endpoint's addresses and how long to keep them, once asked.
    package var redirect: (addresses: [HTTPDNSIPAddress], ttl: Int)?
    package var unpinned = false
    package var unpinnedUsed = false
    package var localTried = false
    package var redirectTried = false
    /// The answer came from the cache: once its addresses are used up, HTTPDNS is asked again
    /// bypassing the cache before LocalDNS (seed 002), once.
    package var reaskable = false
    package var reasked = false
    /// The port connected to, for failure reports.
    package var port = 0
    package var resolutionError: (any Error)?

    /// Adds addresses, alternating IPv6 and IPv4 when both are present (RFC 8305's interleaving).
    package mutating func add(_ addresses: [HTTPDNSIPAddress]) {
        let fresh = addresses.filter { !tried.contains($0) && !queue.contains($0) }
        let v6 = fresh.filter { $0.family == .v6 }
        let v4 = fresh.filter { $0.family == .v4 }
        var merged: [HTTPDNSIPAddress] = []
        let first = fresh.first?.family == .v6 ? v6 : v4
        let second = fresh.first?.family == .v6 ? v4 : v6
        for index in 0..<max(first.count, second.count) {
            if index < first.count { merged.append(first[index]) }
            if index < second.count { merged.append(second[index]) }
        }
        queue += merged
    }

    /// Puts addresses that were never refused back at the front (attempts a failed winner had beaten).
    package mutating func requeue(_ addresses: [HTTPDNSIPAddress]) {
        for address in addresses { tried.remove(address) }
        queue = addresses.filter { !queue.contains($0) } + queue
    }

    /// Whether ``next()`` has an address without asking anyone.
    package var hasNext: Bool { !queue.isEmpty }

    package mutating func next() -> HTTPDNSIPAddress? {
        guard !queue.isEmpty else { return nil }
        let address = queue.removeFirst()
        tried.insert(address)
        return address
    }
}
