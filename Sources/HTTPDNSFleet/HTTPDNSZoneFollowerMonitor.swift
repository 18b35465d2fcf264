/// Told what the zone followers did, to report it (issue 31): the library prints nothing, and
/// `httpdns serve` writes each event as the `httpdns:` line its operators know.
package protocol HTTPDNSZoneFollowerMonitor: Sendable {
    func zoneFollower(_ event: HTTPDNSZoneFollowerEvent)
}

/// One thing a follower did. `source` names a transfer: `example.com`, or
/// `example.com (view carrier-a)` for a view's own.
package enum HTTPDNSZoneFollowerEvent: Sendable {
    /// At start: the copy on disk is in service (its SOA EXPIRE has not passed).
    case servedFromCopy(source: String, serial: UInt32)
    /// At start: the copies on disk do not make a valid zone together; none is served.
    case copiesRefused(detail: String)
    /// At start: a copy on disk is not used, or is held expired; `reason` names its path.
    case copyNotUsed(source: String, reason: String)
    /// A copy could not be written.
    case copyNotWritten(zone: String, path: String, error: String)
    /// A transfer's zone is in service.
    case loaded(source: String, serial: UInt32, incremental: Bool)
    /// A transfer's zone broke the zone rules combined with the rest: the old zone stays.
    case refused(source: String, serial: UInt32, detail: String)
    /// A primary confirmed the serial of a zone served from disk or expired.
    case confirmed(source: String, serial: UInt32)
    /// No primary gave a transfer; each failure says which primary and why.
    case failed(source: String, failures: [String])
    /// The zone was rebuilt after `change` (an expiry, a revival); `failure` is set when the
    /// rebuild was refused.
    case rebuilt(change: String, failure: String?)
    /// A NOTIFY was refused (at most one a second is told).
    case notifyRefused(reason: String)

    /// The event as `httpdns serve` writes it, without the `httpdns: ` prefix.
    package var text: String {
        switch self {
        case .servedFromCopy(let source, let serial): "zone \(source) serial \(serial) served from the copy on disk"
        case .copiesRefused(let detail): "the copies on disk do not make a valid zone, not served: \(detail)"
        case .copyNotUsed(let source, let reason): "zone \(source): \(reason)"
        case .copyNotWritten(let zone, let path, let error): "zone \(zone): the copy \(path) could not be written: \(error)"
        case .loaded(let source, let serial, let incremental): "zone \(source) serial \(serial) loaded by \(incremental ? "IXFR" : "AXFR")"
        case .refused(let source, let serial, let detail): "zone \(source) serial \(serial): keeping the old zone: \(detail)"
        case .confirmed(let source, let serial): "zone \(source) serial \(serial) confirmed by the primary"
        case .failed(let source, let failures): "zone \(source): no transfer: \(failures.joined(separator: "; "))"
        case .rebuilt(let change, nil): change
        case .rebuilt(let change, let failure?): "\(change); the zone could not be rebuilt: \(failure)"
        case .notifyRefused(let reason): "NOTIFY refused: \(reason)"
        }
    }
}

/// A monitor that passes each event's ``HTTPDNSZoneFollowerEvent/text`` to a closure.
package struct HTTPDNSZoneFollowerLines: HTTPDNSZoneFollowerMonitor {
    private let line: @Sendable (String) -> Void

    package init(_ line: @escaping @Sendable (String) -> Void) {
        self.line = line
    }

    package func zoneFollower(_ event: HTTPDNSZoneFollowerEvent) {
        line(event.text)
    }
}
