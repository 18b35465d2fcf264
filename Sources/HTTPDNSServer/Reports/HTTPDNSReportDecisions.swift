import HTTPDNSCore
import HTTPDNSFleet

/// What the reports decided, and the probes that decide it: a plain value with an explicit `now`.
///
/// When clients of a view report an address from ``HTTPDNSService/Reports/threshold`` networks, the
/// server probes the address itself (one probe per address at a time). Then:
/// - the probe fails: the origin is down for everyone, and leaves every answer of every view for
///   the hold time (unless every address of the answer is down: then all are answered, fail open);
/// - the probe succeeds: the origin works, but not from those clients' networks (a carrier that
///   blocks it, seed 003), so it is **demoted in the reporting views only**: their answers put it
///   last for the hold time; other views' answers are unchanged.
///
/// No decision is made on the clients' word alone, so a flood of forged-but-signed reports can at
/// worst reorder one view's answers, never take an address away from anyone.
package struct HTTPDNSReportDecisions: Sendable {
    package typealias Kind = HTTPDNSReportDecision.Kind
    /// One decision in force.
    package typealias Decision = HTTPDNSReportDecision

    /// Seconds a decision holds.
    package let hold: Double
    /// Decisions held at once (down and demoted together); past it the one ending soonest goes, counted.
    package let maxDecisions: Int
    private(set) var down: [HTTPDNSIPAddress: Decision] = [:]
    private(set) var demoted: [HTTPDNSReportAggregator.Key: Decision] = [:]
    /// Addresses with a probe in flight.
    package private(set) var probing: Set<HTTPDNSIPAddress> = []
    /// Decisions dropped before their time to stay within ``maxDecisions``.
    package private(set) var evicted = 0

    package init(hold: Double, maxDecisions: Int = 10_000) {
        self.hold = max(0, hold)
        self.maxDecisions = max(1, maxDecisions)
    }

    /// Whether `key`, now reported from `networks` networks, calls for a probe: at the threshold,
    /// with no decision in force for it and no probe of its address in flight.
    package func needsProbe(_ key: HTTPDNSReportAggregator.Key, networks: Int, threshold: Int, now: Double) -> Bool {
        guard networks >= threshold, !probing.contains(key.address), !isDown(key.address, now: now) else { return false }
        guard let demotion = demoted[key] else { return true }
        return demotion.until <= now
    }

    /// A probe of `address` started.
    package mutating func probeStarted(_ address: HTTPDNSIPAddress) {
        probing.insert(address)
    }

    /// A probe of `address` (to `host`:`port`) ended; `views` are the views reporting it past the
    /// threshold now, with their network counts. Returns the decisions made.
    package mutating func probeFinished(
        _ address: HTTPDNSIPAddress, reachable: Bool, views: [(view: String, networks: Int)], host: String, port: Int, now: Double
    ) -> [Decision] {
        probing.remove(address)
        expire(now: now)
        if !reachable {
            let decision = Decision(
                kind: .down, address: address, view: nil, networks: views.map(\.networks).max() ?? 0, host: host, port: port,
                since: now, until: now + hold)
            if down[address] == nil { makeRoom() }
            down[address] = decision
            return [decision]
        }
        var made: [Decision] = []
        for (view, networks) in views {
            let decision = Decision(kind: .demoted, address: address, view: view, networks: networks, host: host, port: port, since: now, until: now + hold)
            let key = HTTPDNSReportAggregator.Key(address: address, view: view)
            if demoted[key] == nil { makeRoom() }
            demoted[key] = decision
            made.append(decision)
        }
        return made
    }

    /// Takes in a decision made by another instance of the fleet (read from Redis). Returns whether
    /// it changed anything: not when the same decision, or one holding at least as long, is held.
    package mutating func adopt(_ decision: Decision, now: Double) -> Bool {
        guard decision.until > now else { return false }
        switch decision.kind {
        case .down:
            if let held = down[decision.address], held.until >= decision.until { return false }
            if down[decision.address] == nil { makeRoom() }
            down[decision.address] = decision
        case .demoted:
            guard let view = decision.view else { return false }
            let key = HTTPDNSReportAggregator.Key(address: decision.address, view: view)
            if let held = demoted[key], held.until >= decision.until { return false }
            if demoted[key] == nil { makeRoom() }
            demoted[key] = decision
        }
        return true
    }

    /// Whether `address` is down for all at `now`.
    package func isDown(_ address: HTTPDNSIPAddress, now: Double) -> Bool {
        guard let decision = down[address] else { return false }
        return decision.until > now
    }

    /// Whether `address` is demoted in `view` at `now`.
    package func isDemoted(_ address: HTTPDNSIPAddress, view: String, now: Double) -> Bool {
        guard let decision = demoted[HTTPDNSReportAggregator.Key(address: address, view: view)] else { return false }
        return decision.until > now
    }

    /// `addresses` as `view` is to get them at `now`: down ones removed (all kept when all are
    /// down: fail open), demoted ones moved last in their order; the rest untouched.
    package func order(_ addresses: [HTTPDNSIPAddress], view: String, now: Double) -> [HTTPDNSIPAddress] {
        guard !down.isEmpty || !demoted.isEmpty else { return addresses }
        let up = addresses.filter { !isDown($0, now: now) }
        let kept = up.isEmpty ? addresses : up
        var leading: [HTTPDNSIPAddress] = []
        var trailing: [HTTPDNSIPAddress] = []
        for address in kept {
            if isDemoted(address, view: view, now: now) { trailing.append(address) } else { leading.append(address) }
        }
        return leading + trailing
    }

    /// Every decision in force at `now`, down ones first, then by address and view.
    package func inForce(now: Double) -> [Decision] {
        let all = down.values.filter { $0.until > now } + demoted.values.filter { $0.until > now }
        return all.sorted { ($0.kind == .down ? 0 : 1, $0.address.description, $0.view ?? "") < ($1.kind == .down ? 0 : 1, $1.address.description, $1.view ?? "") }
    }

    /// How many decisions of each kind are in force at `now` (no sorting: this runs per batch).
    package func counts(now: Double) -> (down: Int, demoted: Int) {
        (down.values.count { $0.until > now }, demoted.values.count { $0.until > now })
    }

    /// Forgets decisions whose hold has ended.
    package mutating func expire(now: Double) {
        down = down.filter { $0.value.until > now }
        demoted = demoted.filter { $0.value.until > now }
    }

    private mutating func makeRoom() {
        guard down.count + demoted.count >= maxDecisions else { return }
        let soonestDown = down.min { $0.value.until < $1.value.until }
        let soonestDemoted = demoted.min { $0.value.until < $1.value.until }
        if let soonestDown, soonestDown.value.until <= soonestDemoted?.value.until ?? .infinity {
            down[soonestDown.key] = nil
        } else if let soonestDemoted {
            demoted[soonestDemoted.key] = nil
        }
        evicted += 1
    }
}
