import HTTPDNSCore

/// One thing probed: an address with a check. However many names list the address with the same
/// check, it is probed once and its state applies to all of them.
package struct HTTPDNSHealthTarget: Sendable, Hashable, Comparable {
    package var address: HTTPDNSIPAddress
    package var check: HTTPDNSHealthCheck

    package init(address: HTTPDNSIPAddress, check: HTTPDNSHealthCheck) {
        self.address = address
        self.check = check
    }

    /// Address order, then check label: the order of `/metrics` and `/status`.
    package static func < (lhs: Self, rhs: Self) -> Bool {
        precedes((lhs.address, lhs.check.label), (rhs.address, rhs.check.label))
    }

    /// Address order (IPv4 first, then by the address's words: no byte arrays, as this sorts every
    /// checked target), then check label.
    package static func precedes(_ lhs: (HTTPDNSIPAddress, String), _ rhs: (HTTPDNSIPAddress, String)) -> Bool {
        if lhs.0 != rhs.0 {
            let (left, right) = (lhs.0.words, rhs.0.words)
            return (lhs.0.family == .v4 ? 0 : 1, left.high, left.low) < (rhs.0.family == .v4 ? 0 : 1, right.high, right.low)
        }
        return lhs.1 < rhs.1
    }
}

/// The targets of a zone, each with the names that use it (sorted).
package struct HTTPDNSHealthTargets: Sendable, Hashable {
    package var names: [HTTPDNSHealthTarget: [String]]

    package init(names: [HTTPDNSHealthTarget: [String]] = [:]) {
        self.names = names
    }

    /// Every address of every checked entry of `zone`, its views' addresses included.
    package init(zone: HTTPDNSZone) {
        var names: [HTTPDNSHealthTarget: [String]] = [:]
        for (name, entry) in zone.entries {
            guard let check = entry.check else { continue }
            // A view's addresses are checked as the entry's own (views give records, not checks).
            var addresses = Set(entry.ipv4 + entry.ipv6)
            for viewEntry in entry.views.values { addresses.formUnion(viewEntry.ipv4 + viewEntry.ipv6) }
            for address in addresses {
                names[HTTPDNSHealthTarget(address: address, check: check), default: []].append(name)
            }
        }
        for key in names.keys { names[key]?.sort() }
        self.names = names
    }

    /// The name a probe of `target` sends as SNI and `Host`: the first name, in sorted order, that
    /// uses the target and is not a wildcard (the zone refuses `tls`, `http` and `https` checks on
    /// wildcard entries, so there is always one for them).
    package func probeName(_ target: HTTPDNSHealthTarget) -> String? {
        names[target]?.first { !$0.hasPrefix("*.") }
    }

    package var isEmpty: Bool { names.isEmpty }
    package var count: Int { names.count }
}
