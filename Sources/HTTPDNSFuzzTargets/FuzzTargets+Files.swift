import Foundation
import HTTPDNS
import HTTPDNSCore
@_spi(HTTPDNSPackage) import HTTPDNSOperations
import HTTPDNSServer

/// Files an app or a server reads: the server's zone file and the engine's cache file.
extension HTTPDNSFuzzTarget {
    static let zoneFile = HTTPDNSFuzzTarget("zone-file", "a loaded zone holds normalised names that match themselves") {
        bytes throws(HTTPDNSFuzzFailure) in
        guard let zone = try? HTTPDNSZone(json: Data(bytes)) else { return }
        try require(zone.entries.count <= HTTPDNSZone.maxNames, "\(zone.entries.count) names")
        for (key, entry) in zone.entries {
            let base = key.hasPrefix("*.") ? String(key.dropFirst(2)) : key
            try require(isNormalisedHostName(base), "zone name \(key) is not a normalised host name")
            try require((0...HTTPDNSFormatLimits.maxTTL).contains(entry.ttl), "TTL \(entry.ttl)")
            if let cname = entry.cname { try require(isNormalisedHostName(cname), "CNAME \(cname)") }
            if key == base {
                try require(zone.match(key)?.key == key, "\(key) does not match itself")
                try require(zone.match(key.uppercased() + ".")?.key == key, "\(key) in upper case with a dot does not match")
            } else if zone.entries["zz-fuzz." + base] == nil {
                try require(zone.match("zz-fuzz." + base) != nil, "wildcard \(key) matches nothing below it")
            }
        }
    }

    /// Settings and clock of the cache-file target.
    private static let cacheSettings = HTTPDNSCacheSettings()
    private static let cacheNow: Double = 1_767_225_600

    static let cacheFile = HTTPDNSFuzzTarget(
        "cache-file", "a cache file loads whole or not at all, only entries a network answer could make, and no lookup traps"
    ) { bytes throws(HTTPDNSFuzzFailure) in
        var input = FuzzInput(bytes)
        let key: [UInt8]? = input.choice(2) == 1 ? Array("fuzz-key".utf8) : nil
        let body = input.rest
        // As given (the header must be right), and as a body under a right header, so that the
        // fuzzer reaches the entry checks behind the digest.
        for file in [body, Array(HTTPDNSCacheFile.header(for: body, key: key).utf8) + body] {
            guard let entries = try? HTTPDNSCacheFile.decode(
                file, key: key, hygiene: HTTPDNSAnswerHygiene(), settings: cacheSettings, now: cacheNow)
            else { continue }
            try checkLoaded(entries)
            // Whatever was loaded saves and loads back the same.
            guard let again = try? HTTPDNSCacheFile.encode(entries, key: key),
                  let reloaded = try? HTTPDNSCacheFile.decode(
                      again, key: key, hygiene: HTTPDNSAnswerHygiene(), settings: cacheSettings, now: cacheNow)
            else { throw HTTPDNSFuzzFailure(detail: "loaded entries do not save and load back") }
            try require(reloaded.map(\.key) == entries.map(\.key), "the keys changed on a save and load")
            try require(reloaded.map(\.entry) == entries.map(\.entry), "the entries changed on a save and load")
        }
        // Any values at all in the cache policy: lookups never trap (the cache file used to hold
        // TTLs that did).
        var raw = FuzzInput(body)
        var cache = HTTPDNSCachePolicy(settings: cacheSettings)
        let cacheKey = HTTPDNSCacheKey(host: "a.test", family: .ipv4)
        let ttl = Int(truncatingIfNeeded: (0..<8).reduce(UInt64(0)) { value, _ in value << 8 | UInt64(raw.choice(256)) })
        let storedAt = Double(bitPattern: (0..<8).reduce(UInt64(0)) { value, _ in value << 8 | UInt64(raw.choice(256)) })
        var entry = HTTPDNSCacheEntry(
            addresses: [HTTPDNSIPAddress("192.0.2.1")!], source: "p", origin: .httpdns, storedAt: storedAt, ttl: ttl)
        entry.fromDisk = raw.choice(2) == 1
        cache.insert(cacheKey, entry)
        for now in [cacheNow, storedAt, storedAt + 1, -Double.greatestFiniteMagnitude, .greatestFiniteMagnitude, .infinity] {
            if case .fresh(_, let remaining, _) = cache.lookup(cacheKey, now: now) {
                try require((1...HTTPDNSFormatLimits.maxTTL).contains(remaining), "remaining TTL \(remaining)")
            }
            _ = cache.refreshFailed(cacheKey, now: now)
        }
    }

    private static func checkLoaded(_ entries: [(key: HTTPDNSCacheKey, entry: HTTPDNSCacheEntry)]) throws(HTTPDNSFuzzFailure) {
        try require(entries.count <= cacheSettings.capacity, "\(entries.count) entries")
        try require(Set(entries.map(\.key)).count == entries.count, "a key loaded twice")
        for (key, entry) in entries {
            try require(isNormalisedHostName(key.host) && !HTTPDNSIPAddress.isLiteral(key.host), "host \(key.host)")
            try require(!entry.addresses.isEmpty, "no address for \(key.host)")
            try require(entry.addresses.allSatisfy { !$0.isBogon }, "a bogon for \(key.host)")
            try require(entry.addresses.allSatisfy { address in
                switch key.family {
                case .ipv4: address.family == .v4
                case .ipv6: address.family == .v6
                case .both: true
                case .auto: false  // never stored: the engine keys what `.auto` stood for
                }
            }, "an address of the wrong family for \(key.host)")
            try require(Set(entry.addresses).count == entry.addresses.count, "a repeated address")
            try require(entry.addresses.count <= 2 * HTTPDNSFormatLimits.maxAddressesPerName, "\(entry.addresses.count) addresses")
            try require(
                (cacheSettings.minimumTTL...cacheSettings.maximumTTL).contains(entry.ttl), "TTL \(entry.ttl) past the cache's limits")
            try require(entry.storedAt.isFinite && entry.storedAt <= cacheNow + 60, "stored at \(entry.storedAt)")
            try require(cacheNow - entry.expiresAt <= Double(cacheSettings.maximumStaleAge), "too old to serve")
            try require(entry.fromDisk && entry.staleUntil == nil && entry.nextRefreshAt == nil, "state carried from disk")
        }
    }

    private static func isNormalisedHostName(_ name: String) -> Bool {
        HTTPDNSHostPolicy.isValidHostName(name) && HTTPDNSHostPolicy.normalize(name) == name
    }
}

/// The server's CIDR list files (views) and the longest-prefix table built from them.
extension HTTPDNSFuzzTarget {
    static let cidrList = HTTPDNSFuzzTarget(
        "cidr-list", "a CIDR list loads whole or not at all; its networks print and load back, and the table finds each one"
    ) { bytes throws(HTTPDNSFuzzFailure) in
        guard let networks = try? HTTPDNSNetworkList.parse(bytes, source: "fuzz") else { return }
        try require(networks.count <= HTTPDNSNetworkList.maxNetworks, "\(networks.count) networks")
        var table = HTTPDNSPrefixTable<Int>()
        for (index, network) in networks.enumerated() {
            let bits = network.family == .v4 ? 32 : 128
            try require((0...bits).contains(network.prefixLength), "prefix length \(network.prefixLength)")
            try require(HTTPDNSNetwork(address: network.address, prefixLength: network.prefixLength) == network, "\(network) has bits past its prefix")
            table.insert(network, index)
        }
        let written = networks.map(\.description).joined(separator: "\n")
        let reread = try? HTTPDNSNetworkList.parse(Array(written.utf8), source: "fuzz")
        try require(reread == networks, "the networks do not print and load back: \(written)")
        for network in networks.prefix(1_000) {
            let match = table.lookup(network.address)
            let bits = network.family == .v4 ? 32 : 128
            try require(match.value != nil && match.prefixLength >= network.prefixLength, "\(network) not found")
            try require(match.scope >= match.prefixLength && match.scope <= bits, "scope \(match.scope) for \(network)")
        }
    }
}

/// `--tls-ticket-keys` files: loaded whole or refused; what loads writes back and loads the same.
extension HTTPDNSFuzzTarget {
    static let ticketKeys = HTTPDNSFuzzTarget(
        "ticket-keys", "a TLS ticket key file loads whole or not at all: 1-16 keys of 80 bytes with distinct names, written back the same"
    ) { bytes throws(HTTPDNSFuzzFailure) in
        guard let keys = try? HTTPDNSTLSTicketKeys.parse(bytes, source: "fuzz") else { return }
        try require((1...HTTPDNSTLSTicketKeys.maxKeys).contains(keys.keys.count), "\(keys.keys.count) keys")
        try require(keys.keys.allSatisfy { $0.count == HTTPDNSTLSTicketKeys.keyBytes }, "a key of another length")
        try require(Set(keys.keys.map { Array($0[0..<16]) }).count == keys.keys.count, "two keys with one name")
        let written = keys.keys.map { Data($0).base64EncodedString() }.joined(separator: "\n")
        let reread = try? HTTPDNSTLSTicketKeys.parse(Array(written.utf8), source: "fuzz")
        try require(reread == keys, "written back, the keys load differently")
    }
}
