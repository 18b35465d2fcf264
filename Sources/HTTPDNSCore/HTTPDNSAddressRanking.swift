/// Remembered connect times per address, to try the fastest address first (IP ranking, RFC 8305 §4
/// "historical data"), as a plain value: the engine keeps one behind its lock.
///
/// Each address keeps a smoothed connect time (7/8 old, 1/8 new, as TCP smooths its RTT, RFC 6298).
/// An address that had not connected when another won a race gets at least the time it was given,
/// so it sorts behind the winner without being cooled down: it did not fail, it was slow. Entries
/// older than ``maxAge`` count as unknown (the network may have changed), and at most ``capacity``
/// addresses are kept, the least recently measured leaving first.
package struct HTTPDNSAddressRanking: Sendable {
    private struct Entry: Sendable {
        var estimate: Double
        var updated: Double
    }

    /// Most addresses remembered.
    package let capacity: Int
    /// Seconds after which a measurement is ignored.
    package let maxAge: Double
    private var entries: [HTTPDNSIPAddress: Entry] = [:]

    package init(capacity: Int = 512, maxAge: Double = 600) {
        self.capacity = max(1, capacity)
        self.maxAge = maxAge
    }

    /// How many addresses are remembered.
    package var count: Int { entries.count }

    /// The smoothed connect time of `address`, or nil when unknown or too old.
    package func estimate(_ address: HTTPDNSIPAddress, now: Double) -> Duration? {
        guard let entry = entries[address], now - entry.updated <= maxAge else { return nil }
        return .nanoseconds(Int64(entry.estimate * 1e9))
    }

    /// `address` connected in `time`.
    package mutating func record(_ address: HTTPDNSIPAddress, connectTime time: Duration, now: Double) {
        let seconds = Self.seconds(time)
        if let entry = entries[address], now - entry.updated <= maxAge {
            entries[address] = Entry(estimate: entry.estimate * 7 / 8 + seconds / 8, updated: now)
        } else {
            insert(address, Entry(estimate: seconds, updated: now))
        }
    }

    /// `address` had not connected after `elapsed`, when another address won the race.
    package mutating func recordUnfinished(_ address: HTTPDNSIPAddress, after elapsed: Duration, now: Double) {
        let seconds = Self.seconds(elapsed)
        if let entry = entries[address], now - entry.updated <= maxAge {
            entries[address] = Entry(estimate: max(entry.estimate, seconds), updated: now)
        } else {
            insert(address, Entry(estimate: seconds, updated: now))
        }
    }

    /// `addresses` fastest first; an address without a measurement counts as `unknown` (the racing
    /// delay is a good choice: trying it first costs at most that). Ties keep the given order.
    package func ordered(_ addresses: [HTTPDNSIPAddress], unknown: Duration, now: Double) -> [HTTPDNSIPAddress] {
        guard !entries.isEmpty, addresses.count > 1 else { return addresses }
        let unknownSeconds = Self.seconds(unknown)
        let keyed = addresses.enumerated().map { index, address -> (Double, Int, HTTPDNSIPAddress) in
            let entry = entries[address].flatMap { now - $0.updated <= maxAge ? $0.estimate : nil }
            return (entry ?? unknownSeconds, index, address)
        }
        return keyed.sorted { ($0.0, $0.1) < ($1.0, $1.1) }.map(\.2)
    }

    /// Forgets every measurement (after a network change).
    package mutating func removeAll() {
        entries.removeAll()
    }

    private mutating func insert(_ address: HTTPDNSIPAddress, _ entry: Entry) {
        if entries[address] == nil, entries.count >= capacity,
           let oldest = entries.min(by: { $0.value.updated < $1.value.updated })?.key {
            entries[oldest] = nil
        }
        entries[address] = entry
    }

    private static func seconds(_ duration: Duration) -> Double {
        let (seconds, attoseconds) = duration.components
        return max(0, Double(seconds) + Double(attoseconds) / 1e18)
    }
}
