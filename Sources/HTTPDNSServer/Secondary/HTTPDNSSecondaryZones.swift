import DNSSockets
import DNSWire
import HTTPDNSCore

/// The zones `httpdns serve` follows on primaries, put together into the zone it answers from
/// (issue 24): each secondary's latest zone (``HTTPDNSZone/transferred(_:overlay:)``), the JSON
/// zone as the overlay of checks and views, swapped into the service whole after every transfer.
/// A combination that breaks the zone rules is refused and the service keeps what it had.
///
/// `/ready` answers `503 loading ZONE` until every zone has been loaded once.
package final class HTTPDNSSecondaryZones: Sendable {
    private struct WeakReference: @unchecked Sendable {
        weak var value: HTTPDNSSecondaryZones?
    }

    private let secondaries: [HTTPDNSSecondary]
    private let overlay: HTTPDNSLock<HTTPDNSZone>
    private let service: HTTPDNSService
    private let log: @Sendable (String) -> Void
    /// Serializes rebuilds: two transfers ending together must not swap in an older combination last.
    private let building = HTTPDNSLock(())
    private let listener = HTTPDNSLock<HTTPDNSNotifyListener?>(nil)

    /// - Parameters:
    ///   - configurations: one per zone followed.
    ///   - overlay: the JSON zone's names whose checks and views apply to transferred names.
    ///   - log: one line per transfer, refusal and failure (stderr in `httpdns serve`).
    package init(
        _ configurations: [HTTPDNSSecondary.Configuration], overlay: HTTPDNSZone, service: HTTPDNSService,
        log: @escaping @Sendable (String) -> Void
    ) {
        self.overlay = HTTPDNSLock(overlay)
        self.service = service
        self.log = log
        // The secondaries reach this object weakly: it owns them.
        let relay = HTTPDNSLock(WeakReference())
        secondaries = configurations.map { configuration in
            HTTPDNSSecondary(configuration: configuration) { event in relay.withLock { $0.value }?.handle(event, zone: configuration.zone) }
        }
        relay.withLock { $0.value = self }
    }

    /// Starts following every zone; `/ready` waits for them.
    package func start() {
        let secondaries = self.secondaries
        service.setReadiness {
            secondaries.first { $0.current == nil }.map { "loading \($0.configuration.zone.text())" }
        }
        for secondary in secondaries { secondary.start() }
    }

    /// Stops following (the zone in service stays).
    package func stop() {
        listener.withLock { $0.take() }?.stop()
        for secondary in secondaries { secondary.stop() }
    }

    /// Takes NOTIFY messages on `address` (UDP): from a zone's primary, signed with its key when
    /// its transfers are, a NOTIFY makes that zone be checked at once (``HTTPDNSNotifyPolicy``).
    ///
    /// - Returns: the address bound (port 0 picks one).
    /// - Throws: ``HTTPDNSServiceError`` when the address cannot be bound.
    @discardableResult
    package func listenForNotify(on address: SocketAddress) throws(HTTPDNSServiceError) -> SocketAddress {
        let policy = HTTPDNSNotifyPolicy(zones: secondaries.map(\.configuration))
        let relay = HTTPDNSLock(WeakReference(value: self))
        let made = try HTTPDNSNotifyListener(address: address, policy: policy, onNotify: { zone in
            relay.withLock { $0.value }?.notify(zone)
        }, log: log)
        listener.withLock { $0 = made }
        return made.address
    }

    /// Asks the primaries of `zone` now (a NOTIFY for it came); false when no zone of that name is followed.
    @discardableResult
    package func notify(_ zone: DNSName) -> Bool {
        guard let secondary = secondaries.first(where: { $0.configuration.zone == zone }) else { return false }
        secondary.notify()
        return true
    }

    /// A new overlay (SIGHUP): combined with the zones held and swapped in, or refused.
    package func reload(overlay zone: HTTPDNSZone) throws(HTTPDNSServiceError) {
        try building.withLock { (_: inout Void) throws(HTTPDNSServiceError) in
            try service.reload(zone: try combine(overlay: zone))
            overlay.withLock { $0 = zone }
        }
    }

    private func handle(_ event: HTTPDNSSecondary.Event, zone: DNSName) {
        switch event {
        case .loaded(let snapshot, let incremental):
            do throws(HTTPDNSServiceError) {
                try building.withLock { (_: inout Void) throws(HTTPDNSServiceError) in
                    let combined = try combine(overlay: overlay.withLock { $0 })
                    try service.reload(zone: combined)
                    service.metrics.zoneLoaded(names: combined.entries.count)
                }
                log("httpdns: zone \(zone.text()) serial \(snapshot.soa.serial) loaded by \(incremental ? "IXFR" : "AXFR")")
            } catch {
                service.metrics.zoneLoadFailed()
                log("httpdns: zone \(zone.text()) serial \(snapshot.soa.serial): keeping the old zone: \(error.detail)")
            }
        case .current:
            break
        case .failed(let reasons):
            log("httpdns: zone \(zone.text()): no transfer: \(reasons.joined(separator: "; "))")
        }
    }

    /// Every zone held, converted, and merged (names of different zones never collide: a name
    /// belongs to the zone whose apex is its closest).
    private func combine(overlay: HTTPDNSZone) throws(HTTPDNSServiceError) -> HTTPDNSZone {
        var entries: [String: HTTPDNSZone.Entry] = [:]
        for secondary in secondaries {
            guard let snapshot = secondary.current else { continue }
            let converted = try HTTPDNSZone.transferred(snapshot, overlay: overlay)
            for (name, entry) in converted.zone.entries where entries[name] == nil { entries[name] = entry }
        }
        return try HTTPDNSZone(entries: entries)
    }
}
