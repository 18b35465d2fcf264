#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Dispatch
import DNSSockets
import DNSWire
import Foundation
import HTTPDNSCore

/// The zones `httpdns serve` follows on primaries, put together into the zone it answers from
/// (issue 24): each secondary's latest good zone (``HTTPDNSZone/transferred(_:overlay:)``), the
/// JSON zone as the overlay of checks and views, swapped into the service whole after every
/// transfer. A combination that breaks the zone rules is refused and the service keeps what it had;
/// the refused zone is not used again (another zone's transfer combines the last good one).
///
/// With a directory for copies, each good zone is also kept on disk (``DNSZoneCopy``, written
/// atomically off the cooperative pool), and its file's modification time is set each time a
/// primary confirms it, as BIND does: a restart with every primary unreachable serves the copy until
/// its SOA EXPIRE has passed since that time.
///
/// `/ready` answers `503 loading ZONE` until every zone has been loaded once (from a primary or a
/// copy), and `503 expired ZONE …` while one is expired; when ready, it notes the zones served
/// from disk that no primary has confirmed since the start.
package final class HTTPDNSSecondaryZones: Sendable {
    private struct WeakReference: @unchecked Sendable {
        weak var value: HTTPDNSSecondaryZones?
    }

    /// What this object holds per zone, beside the secondary's own state.
    private struct Held: Sendable {
        /// The last zone that passed the checks: what the service answers from (unless expired).
        var accepted: DNSZoneSnapshot?
        /// `accepted` came from the copy on disk and no primary has confirmed it since.
        var fromDisk = false
    }

    private let secondaries: [HTTPDNSSecondary]
    private let held: HTTPDNSLock<[DNSName: Held]>
    private let overlay: HTTPDNSLock<HTTPDNSZone>
    private let service: HTTPDNSService
    private let directory: String?
    private let log: @Sendable (String) -> Void
    /// Serializes rebuilds: two transfers ending together must not swap in an older combination last.
    private let building = HTTPDNSLock(())
    private let listener = HTTPDNSLock<HTTPDNSNotifyListener?>(nil)
    /// Writes the copies, in order, off the cooperative pool.
    private let writer = DispatchQueue(label: "swift-httpdns.zone-copies")

    /// - Parameters:
    ///   - configurations: one per zone followed.
    ///   - overlay: the JSON zone's names whose checks and views apply to transferred names.
    ///   - directory: where each zone's last good copy is kept (`ZONE.httpdns-zone`), read back
    ///     and put into service here; nil: none. Blocking reads: call this at start-up, before the
    ///     service listens.
    ///   - log: one line per transfer, refusal and failure (stderr in `httpdns serve`).
    package init(
        _ configurations: [HTTPDNSSecondary.Configuration], overlay: HTTPDNSZone, service: HTTPDNSService,
        directory: String? = nil, log: @escaping @Sendable (String) -> Void
    ) {
        self.overlay = HTTPDNSLock(overlay)
        self.service = service
        self.directory = directory
        self.log = log
        var held: [DNSName: Held] = [:]
        // The secondaries reach this object weakly: it owns them.
        let relay = HTTPDNSLock(WeakReference())
        secondaries = configurations.map { configuration in
            let restored = directory.flatMap { Self.readCopy(configuration, directory: $0, log: log) }
            // An expired copy is held too (not served: `/ready` says it expired).
            if let restored { held[configuration.zone] = Held(accepted: restored.zone, fromDisk: true) }
            return HTTPDNSSecondary(configuration: configuration, restored: restored) { event in
                relay.withLock { $0.value }?.handle(event, zone: configuration.zone)
            }
        }
        self.held = HTTPDNSLock(held)
        relay.withLock { $0.value = self }
        let secondaries = self.secondaries
        let heldZones = self.held
        service.setReadiness {
            var readiness = HTTPDNSService.Readiness()
            let zones = heldZones.withLock { $0 }
            for secondary in secondaries {
                let zone = secondary.configuration.zone
                guard let accepted = zones[zone]?.accepted else {
                    readiness.notReady.append("loading \(zone.text())")
                    continue
                }
                if secondary.isExpired {
                    readiness.notReady.append("expired \(zone.text()) serial \(accepted.soa.serial): no primary confirmed it within its SOA expire")
                } else if zones[zone]?.fromDisk == true {
                    readiness.notes.append("\(zone.text()) serial \(accepted.soa.serial) from disk: no primary has confirmed it since the start")
                }
            }
            return readiness
        }
        if !held.isEmpty {
            do throws(HTTPDNSServiceError) {
                try rebuild()
                for secondary in secondaries where !secondary.isExpired {
                    let zone = secondary.configuration.zone
                    guard let serial = held[zone]?.accepted?.soa.serial else { continue }
                    log("httpdns: zone \(zone.text()) serial \(serial) served from the copy on disk")
                }
            } catch {
                log("httpdns: the copies on disk do not make a valid zone, not served: \(error.detail)")
                heldZones.withLock { $0 = [:] }
            }
        }
    }

    /// The file of `zone`'s copy in `directory`: the zone's name, lower case, with any byte other
    /// than a letter, digit, `-`, `_` or `.` as `%XX`.
    package static func copyPath(_ zone: DNSName, directory: String) -> String {
        var name = ""
        for byte in zone.text().lowercased().utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."):
                name.append(Character(UnicodeScalar(byte)))
            default:
                name += "%" + String(byte, radix: 16, uppercase: true).leftPadded(to: 2)
            }
        }
        return directory + "/" + name + ".httpdns-zone"
    }

    /// Starts following every zone (`/ready` waits for them, and a copy read from disk is in
    /// service, from ``init`` on).
    package func start() {
        for secondary in secondaries { secondary.start() }
    }

    /// Stops following (the zone in service stays); copies being written are finished first.
    package func stop() {
        listener.withLock { $0.take() }?.stop()
        for secondary in secondaries { secondary.stop() }
        writer.sync {}
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
            try service.reload(zone: try combine(held.withLock { $0 }, overlay: zone))
            overlay.withLock { $0 = zone }
        }
    }

    /// Blocks until the copies queued so far are on disk (tests, orderly shutdown).
    package func flushCopies() {
        writer.sync {}
    }

    private func handle(_ event: HTTPDNSSecondary.Event, zone: DNSName) {
        let metrics = service.metrics
        let label = zone.text()
        switch event {
        case .loaded(let snapshot, let incremental):
            do throws(HTTPDNSServiceError) {
                try building.withLock { (_: inout Void) throws(HTTPDNSServiceError) in
                    var candidate = held.withLock { $0 }
                    candidate[zone] = Held(accepted: snapshot)
                    let combined = try combine(candidate, overlay: overlay.withLock { $0 })
                    try service.reload(zone: combined)
                    held.withLock { $0 = candidate }
                    metrics.zoneLoaded(names: combined.entries.count)
                }
                metrics.zoneTransfer(label, incremental ? .ixfr : .axfr)
                metrics.zoneSerial(label, snapshot.soa.serial)
                log("httpdns: zone \(label) serial \(snapshot.soa.serial) loaded by \(incremental ? "IXFR" : "AXFR")")
                saveCopy(snapshot)
            } catch {
                metrics.zoneLoadFailed()
                metrics.zoneTransfer(label, .rejected, reasons: ["checks"])
                log("httpdns: zone \(label) serial \(snapshot.soa.serial): keeping the old zone: \(error.detail)")
            }
        case .current(let serial, let revived):
            metrics.zoneTransfer(label, .current)
            let wasFromDisk = held.withLock { held in
                defer { held[zone]?.fromDisk = false }
                return held[zone]?.fromDisk ?? false
            }
            if revived { rebuildLogging("zone \(label) serial \(serial) confirmed again after it expired") }
            if wasFromDisk || revived { log("httpdns: zone \(label) serial \(serial) confirmed by the primary") }
            touchCopy(zone)
        case .failed(let failures):
            metrics.zoneTransfer(label, .failed, reasons: failures.map(\.reason))
            log("httpdns: zone \(label): no transfer: \(failures.map(\.description).joined(separator: "; "))")
        case .expired(let serial):
            metrics.zoneSerial(label, nil)
            rebuildLogging("zone \(label) serial \(serial) expired: no primary confirmed it within its SOA expire; not served")
        }
    }

    /// Swaps in the combination of the zones held now (after an expiry or a revival), logging `line`.
    private func rebuildLogging(_ line: String) {
        do throws(HTTPDNSServiceError) {
            try rebuild()
            log("httpdns: \(line)")
        } catch {
            service.metrics.zoneLoadFailed()
            log("httpdns: \(line); the zone could not be rebuilt: \(error.detail)")
        }
    }

    private func rebuild() throws(HTTPDNSServiceError) {
        try building.withLock { (_: inout Void) throws(HTTPDNSServiceError) in
            let combined = try combine(held.withLock { $0 }, overlay: overlay.withLock { $0 })
            try service.reload(zone: combined)
            service.metrics.zoneLoaded(names: combined.entries.count)
        }
        for secondary in secondaries {
            let label = secondary.configuration.zone.text()
            let served = secondary.isExpired ? nil : held.withLock { $0[secondary.configuration.zone]?.accepted }
            service.metrics.zoneSerial(label, served?.soa.serial)
        }
    }

    /// Every zone held and not expired, converted, and merged (names of different zones never
    /// collide: a name belongs to the zone whose apex is its closest).
    private func combine(_ held: [DNSName: Held], overlay: HTTPDNSZone) throws(HTTPDNSServiceError) -> HTTPDNSZone {
        var entries: [String: HTTPDNSZone.Entry] = [:]
        for secondary in secondaries where !secondary.isExpired {
            guard let snapshot = held[secondary.configuration.zone]?.accepted else { continue }
            let converted = try HTTPDNSZone.transferred(snapshot, overlay: overlay)
            for (name, entry) in converted.zone.entries where entries[name] == nil { entries[name] = entry }
        }
        return try HTTPDNSZone(entries: entries)
    }

    // MARK: Copies on disk

    /// Reads `configuration`'s copy: the zone and how many seconds ago its file was last touched;
    /// nil when there is none or it is refused (logged).
    private static func readCopy(
        _ configuration: HTTPDNSSecondary.Configuration, directory: String, log: @Sendable (String) -> Void
    ) -> (zone: DNSZoneSnapshot, confirmedAgo: Double)? {
        let path = copyPath(configuration.zone, directory: directory)
        let zone = configuration.zone.text()
        var info = stat()
        guard lstat(path, &info) == 0 else { return nil }
        guard info.st_mode & S_IFMT == S_IFREG else {
            log("httpdns: zone \(zone): \(path) is not a regular file; not used")
            return nil
        }
        // The transfer's own byte cap, plus the header line.
        guard Int(info.st_size) <= configuration.limits.maxBytes + 256,
              let data = FileManager.default.contents(atPath: path)
        else {
            log("httpdns: zone \(zone): \(path) cannot be read or is larger than a transfer may be; not used")
            return nil
        }
        let snapshot: DNSZoneSnapshot
        do throws(DNSZoneCopy.Rejection) {
            snapshot = try DNSZoneCopy.decode(Array(data), zone: configuration.zone, limits: configuration.limits)
        } catch {
            log("httpdns: zone \(zone): the copy in \(path) is not used: \(error.reason)")
            return nil
        }
        let modified = Double(info.st_mtim.tv_sec) + Double(info.st_mtim.tv_nsec) / 1e9
        let confirmedAgo = max(0, Date().timeIntervalSince1970 - modified)
        if confirmedAgo > Double(snapshot.soa.expire) {
            log("httpdns: zone \(zone): the copy in \(path) (serial \(snapshot.soa.serial)) expired \(Int(confirmedAgo) - Int(snapshot.soa.expire)) s ago; not served until a primary answers")
        }
        return (snapshot, confirmedAgo)
    }

    private func saveCopy(_ snapshot: DNSZoneSnapshot) {
        guard let directory else { return }
        let path = Self.copyPath(snapshot.zone, directory: directory)
        let log = self.log
        writer.async {
            do {
                try HTTPDNSAtomicFile.replace(path, with: try DNSZoneCopy.encode(snapshot), mode: 0o644)
            } catch {
                log("httpdns: zone \(snapshot.zone.text()): the copy \(path) could not be written: \(error)")
            }
        }
    }

    /// The primary confirmed the zone: the copy's modification time says when (BIND's way).
    private func touchCopy(_ zone: DNSName) {
        guard let directory else { return }
        let path = Self.copyPath(zone, directory: directory)
        writer.async {
            _ = utimensat(AT_FDCWD, path, nil, 0)
        }
    }
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}
