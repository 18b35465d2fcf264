import HTTPDNSCore

/// The health of every target of the zone in service, as a value (see ``HTTPDNSHealthStatus``).
///
/// Every change of an up/down state raises ``generation``; the service answers from the
/// ``snapshot`` of the latest generation and drops its kept wire answers with each new one.
package struct HTTPDNSHealthTable: Sendable {
    package private(set) var targets = HTTPDNSHealthTargets()
    package private(set) var statuses: [HTTPDNSHealthTarget: HTTPDNSHealthStatus] = [:]
    /// Raised on every change of the down set.
    package private(set) var generation = 0
    package private(set) var down: Set<HTTPDNSHealthTarget> = []

    package init() {}

    /// Makes `targets` the set tracked (a zone load): targets that remain keep their state, new ones
    /// start up, the rest are dropped. Returns true when the down set changed.
    @discardableResult
    package mutating func update(targets: HTTPDNSHealthTargets, now: ContinuousClock.Instant) -> Bool {
        self.targets = targets
        statuses = statuses.filter { targets.names[$0.key] != nil }
        for target in targets.names.keys where statuses[target] == nil {
            statuses[target] = HTTPDNSHealthStatus(check: target.check, now: now)
        }
        let remaining = down.filter { targets.names[$0] != nil }
        guard remaining != down else { return false }
        down = remaining
        generation += 1
        return true
    }

    /// Records a probe of `target`; returns true when its up/down state changed. A result for a
    /// target no longer tracked is ignored.
    @discardableResult
    package mutating func record(_ target: HTTPDNSHealthTarget, _ result: HTTPDNSHealthStatus.Result) -> Bool {
        guard var status = statuses[target] else { return false }
        let changed = status.record(result)
        statuses[target] = status
        guard changed else { return false }
        if status.isUp { down.remove(target) } else { down.insert(target) }
        generation += 1
        return true
    }

    /// What requests read: the down set of this generation.
    package var snapshot: HTTPDNSHealthSnapshot { HTTPDNSHealthSnapshot(generation: generation, down: down) }
}

/// The down targets at one generation: read once per request, never changed (a new state is a new
/// snapshot), so answering takes no lock per address.
package struct HTTPDNSHealthSnapshot: Sendable {
    package var generation: Int
    package var down: Set<HTTPDNSHealthTarget>

    package init(generation: Int = 0, down: Set<HTTPDNSHealthTarget> = []) {
        self.generation = generation
        self.down = down
    }

    /// Whether `address` is down for names checking it with `check`.
    @inline(__always)
    package func isDown(_ address: HTTPDNSIPAddress, _ check: HTTPDNSHealthCheck) -> Bool {
        down.contains(HTTPDNSHealthTarget(address: address, check: check))
    }
}
