import HTTPDNSCore
import HTTPDNSFleet

/// Counts, per reported address and client view, the distinct client networks that reported it
/// within a sliding window: a plain value with an explicit `now`, held by ``HTTPDNSReports`` behind
/// its lock.
///
/// What it counts is networks, not reports: one network sending a thousand reports counts once,
/// so a single client cannot push an address past the threshold on its own.
///
/// Memory is bounded by ``Bounds``: at most ``Bounds/maxKeys`` (address, view) pairs, each with at
/// most ``Bounds/maxNetworksPerKey`` networks (16 bytes each). At the defaults (10,000 × 32) that is
/// 320,000 sightings, about 5 MiB, plus per pair the key, the last host name (≤ 253 bytes) and array
/// headers, about 0.5 KiB: some 10 MiB in the worst case, whatever is sent. Past a bound the oldest
/// goes first and is counted (``evictedKeys``, ``evictedNetworks``): a full pair forgets its
/// least recently seen network.
///
/// What one reporter can hold is bounded too, so that a flood evicts the flooder's own state first
/// (the app token ships inside every app: whoever extracts it can report from many networks):
/// - a network (the /24 or /56 of ``HTTPDNSReportNetwork``) creates at most
///   ``Bounds/maxKeysPerNetwork`` pairs; past it, its own earliest created pair goes;
/// - when the table is full, pairs with nothing in the window go first; then pairs created by a
///   network, or under a credential, holding more than its fair share of the table (the table's
///   size divided by the networks, or the credentials, that created pairs), least recently reported
///   first; only when no one holds more than its share, the least recently reported of all. An
///   eighth of the table goes at a time, so that eviction costs one sort per eighth, not a scan per
///   report. Three honest networks reporting one address hold one pair between them, far below
///   any share, and still decide while 500 networks cycle through tens of thousands of pairs.
package struct HTTPDNSReportAggregator: Sendable {
    /// An address as reported by clients of one view.
    package typealias Key = HTTPDNSReportKey

    /// Memory bounds.
    package struct Bounds: Sendable, Hashable {
        /// (address, view) pairs tracked at once. Default 10,000.
        package var maxKeys: Int = 10_000
        /// Distinct networks remembered per pair. Default 32 (a threshold above it could never be met).
        package var maxNetworksPerKey: Int = 32
        /// Pairs one network may create (and hold) at once. Default 32: one /24 of honest apps
        /// reporting more distinct unreachable (address, view) pairs within one window is not seen.
        package var maxKeysPerNetwork: Int = 32

        package init() {}
    }

    /// One network's latest report of a pair.
    struct Sighting: Sendable {
        var network: UInt64
        var time: Double
    }

    struct Entry: Sendable {
        var sightings: [Sighting] = []
        var lastReport: Double
        /// The latest report's name and port: what a probe of the address connects to.
        var host: String
        var port: Int
        /// The network whose report created the pair, and the credential it reported under.
        var creator: UInt64 = 0
        var credential: UInt64 = 0
    }

    /// Seconds a report counts for.
    package let window: Double
    package let bounds: Bounds
    private(set) var entries: [Key: Entry] = [:]
    /// Pairs forgotten to make room, in all.
    package private(set) var evictedKeys = 0
    /// Networks forgotten because their pair was full, in all.
    package private(set) var evictedNetworks = 0
    /// Network sightings held now, over all pairs (the figure the memory bound is stated in).
    package private(set) var trackedNetworks = 0
    /// The pairs each network created, earliest first (at most ``Bounds/maxKeysPerNetwork``).
    private var createdBy: [UInt64: [Key]] = [:]
    /// Pairs created under each credential.
    private var pairsByCredential: [UInt64: Int] = [:]

    package init(window: Double, bounds: Bounds = .init()) {
        self.window = max(0, window)
        var bounds = bounds
        bounds.maxKeys = max(1, bounds.maxKeys)
        bounds.maxNetworksPerKey = max(1, bounds.maxNetworksPerKey)
        bounds.maxKeysPerNetwork = max(1, bounds.maxKeysPerNetwork)
        self.bounds = bounds
    }

    /// Counts a report of `key` from `network` at `now` and returns how many distinct networks
    /// reported the pair within the window, this one included.
    ///
    /// - Parameter credential: who the report was authenticated as (``HTTPDNSReportCredential/owner``);
    ///   0 when unknown.
    @discardableResult
    package mutating func record(
        _ key: Key, network: HTTPDNSReportNetwork, credential: UInt64 = 0, host: String, port: Int, now: Double
    ) -> Int {
        if entries[key] == nil { makeRoom(for: network.packed, now: now) }
        let horizon = now - window
        var entry = entries.removeValue(forKey: key) ?? created(key, by: network.packed, credential: credential, host: host, port: port, now: now)
        entry.lastReport = now
        entry.host = host
        entry.port = port
        if let index = entry.sightings.firstIndex(where: { $0.network == network.packed }) {
            entry.sightings[index].time = now
        } else {
            if entry.sightings.count >= bounds.maxNetworksPerKey {
                let before = entry.sightings.count
                entry.sightings.removeAll { $0.time < horizon }
                trackedNetworks -= before - entry.sightings.count
            }
            if entry.sightings.count >= bounds.maxNetworksPerKey, let oldest = entry.sightings.indices.min(by: { entry.sightings[$0].time < entry.sightings[$1].time }) {
                entry.sightings.remove(at: oldest)
                trackedNetworks -= 1
                evictedNetworks += 1
            }
            entry.sightings.append(Sighting(network: network.packed, time: now))
            trackedNetworks += 1
        }
        let count = entry.sightings.count { $0.time >= horizon }
        entries[key] = entry
        return count
    }

    /// Takes in the fleet's sightings of `key` (read back from Redis, ``HTTPDNSReportSharing``): a
    /// network not held yet is added with its time, a held one keeps the later time. Returns the
    /// distinct networks within the window at `now`, as ``record(_:network:host:port:now:)`` does.
    @discardableResult
    package mutating func merge(_ key: Key, sightings: [HTTPDNSReportSharing.Sighting], host: String, port: Int, now: Double) -> Int {
        let horizon = now - window
        let fresh = sightings.filter { $0.time >= horizon }
        guard !fresh.isEmpty else { return networks(key, now: now) }
        // A pair first seen through the fleet counts as created by its earliest network, under no credential.
        let creator = fresh.min { $0.time < $1.time }?.network ?? 0
        if entries[key] == nil { makeRoom(for: creator, now: now) }
        var entry = entries.removeValue(forKey: key) ?? created(key, by: creator, credential: 0, host: host, port: port, now: now)
        entry.lastReport = max(entry.lastReport, fresh.map(\.time).max() ?? now)
        for sighting in fresh {
            if let index = entry.sightings.firstIndex(where: { $0.network == sighting.network }) {
                entry.sightings[index].time = max(entry.sightings[index].time, sighting.time)
            } else if entry.sightings.count < bounds.maxNetworksPerKey {
                entry.sightings.append(Sighting(network: sighting.network, time: sighting.time))
                trackedNetworks += 1
            }
        }
        let count = entry.sightings.count { $0.time >= horizon }
        entries[key] = entry
        return count
    }

    /// Distinct networks that reported `key` within the window at `now`.
    package func networks(_ key: Key, now: Double) -> Int {
        entries[key]?.sightings.count { $0.time >= now - window } ?? 0
    }

    /// The views whose clients reported `address` from at least `threshold` networks in the window.
    package func views(reporting address: HTTPDNSIPAddress, threshold: Int, now: Double) -> [String] {
        entries.filter { $0.key.address == address && $0.value.sightings.count { $0.time >= now - window } >= threshold }
            .map(\.key.view).sorted()
    }

    /// The name and port of the latest report of `key`.
    package func target(_ key: Key) -> (host: String, port: Int)? {
        entries[key].map { ($0.host, $0.port) }
    }

    /// Pairs tracked now.
    package var trackedKeys: Int { entries.count }

    /// ``trackedNetworks`` counted afresh from the pairs (tests check the running count with it).
    package var recountedNetworks: Int { entries.values.reduce(0) { $0 + $1.sightings.count } }

    /// Forgets pairs with nothing left in the window.
    package mutating func expire(now: Double) {
        let horizon = now - window
        let gone = entries.filter { $0.value.lastReport < horizon }.map(\.key)
        for key in gone { forget(key) }
    }

    /// Pairs created by `network` now.
    package func pairs(createdBy network: HTTPDNSReportNetwork) -> Int { createdBy[network.packed]?.count ?? 0 }

    /// The pairs with the most networks in the window, at most `limit`, for the status page.
    package func busiest(limit: Int, now: Double) -> [(key: Key, networks: Int)] {
        let horizon = now - window
        return entries.map { (key: $0.key, networks: $0.value.sightings.count { $0.time >= horizon }) }
            .filter { $0.networks > 0 }
            .sorted { $0.networks != $1.networks ? $0.networks > $1.networks : ($0.key.address.description, $0.key.view) < ($1.key.address.description, $1.key.view) }
            .prefix(max(0, limit)).map { $0 }
    }

    /// A new pair's entry, counted as `network`'s and `credential`'s.
    private mutating func created(_ key: Key, by network: UInt64, credential: UInt64, host: String, port: Int, now: Double) -> Entry {
        createdBy[network, default: []].append(key)
        pairsByCredential[credential, default: 0] += 1
        return Entry(lastReport: now, host: host, port: port, creator: network, credential: credential)
    }

    /// Removes `key` and everything counted for it.
    private mutating func forget(_ key: Key) {
        guard let entry = entries.removeValue(forKey: key) else { return }
        trackedNetworks -= entry.sightings.count
        if var keys = createdBy[entry.creator], let index = keys.firstIndex(of: key) {
            keys.remove(at: index)
            createdBy[entry.creator] = keys.isEmpty ? nil : keys
        }
        if let count = pairsByCredential[entry.credential] {
            pairsByCredential[entry.credential] = count > 1 ? count - 1 : nil
        }
    }

    /// Room for a pair `network` is about to create: its own earliest pair past its quota, then
    /// the table's bound (see the type's doc).
    private mutating func makeRoom(for network: UInt64, now: Double) {
        if let own = createdBy[network], own.count >= bounds.maxKeysPerNetwork {
            for key in own.prefix(own.count - bounds.maxKeysPerNetwork + 1) { forget(key) }
            evictedKeys += own.count - bounds.maxKeysPerNetwork + 1
        }
        guard entries.count >= bounds.maxKeys else { return }
        // Pairs with nothing in the window go first, without counting: they were done anyway.
        expire(now: now)
        guard entries.count >= bounds.maxKeys else { return }
        let networkShare = bounds.maxKeys / max(1, createdBy.count)
        let credentialShare = bounds.maxKeys / max(1, pairsByCredential.count)
        let overShare = entries.filter { _, entry in
            (createdBy[entry.creator]?.count ?? 0) > networkShare || (pairsByCredential[entry.credential] ?? 0) > credentialShare
        }
        let pool = overShare.isEmpty ? entries : overShare
        let oldest = pool.sorted { $0.value.lastReport < $1.value.lastReport }.prefix(max(1, bounds.maxKeys / 8)).map(\.key)
        for key in oldest { forget(key) }
        evictedKeys += oldest.count
    }
}
