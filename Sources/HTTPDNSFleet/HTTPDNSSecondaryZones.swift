#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import DNSZoneTransfer
import Dispatch
import DNSSockets
import DNSWire
import Foundation
import HTTPDNSCore

/// The zones `httpdns serve` follows on primaries, put together into the zone it answers from
/// (issue 24): each secondary's latest good zone, with the JSON zone as the overlay of checks and
/// views, handed to the service (an ``HTTPDNSZoneSink``) whole after every transfer. A
/// combination that breaks the zone rules is refused and the service keeps what it had; the refused
/// zone is not used again (another zone's transfer combines the last good one).
///
/// With a directory for copies, each good zone is also kept on disk (``DNSZoneCopy``, written
/// atomically off the cooperative pool), and its file's modification time is set each time a
/// primary confirms it, as BIND does: a restart with every primary unreachable serves the copy until
/// its SOA EXPIRE has passed since that time.
///
/// `/ready` answers `503 loading ZONE` until every zone has been loaded once (from a primary or a
/// copy), and `503 expired ZONE …` while one is expired; when ready, it notes the zones served
/// from disk that no primary has confirmed since the start.
///
/// What happens is told to a ``HTTPDNSZoneFollowerMonitor`` (`httpdns serve` writes lines); what
/// is counted goes to the sink.
package final class HTTPDNSSecondaryZones<Sink: HTTPDNSZoneSink>: Sendable {
    private struct WeakReference: @unchecked Sendable {
        weak var value: HTTPDNSSecondaryZones?
    }

    /// A transfer followed: a zone, for every client or for one view's.
    private struct Source: Hashable, Sendable {
        var zone: DNSName
        var view: String?

        init(_ configuration: HTTPDNSSecondary.Configuration) {
            zone = configuration.zone
            view = configuration.view
        }

        /// `example.com`, or `example.com (view carrier-a)`.
        var text: String { zone.text() + (view.map { " (view \($0))" } ?? "") }
    }

    /// What this object holds per transfer, beside the secondary's own state.
    private struct Held: Sendable {
        /// The last zone that passed the checks: what the service answers from (unless expired).
        var accepted: DNSZoneSnapshot?
        /// `accepted` came from the copy on disk and no primary has confirmed it since.
        var fromDisk = false
    }

    private let secondaries: [HTTPDNSSecondary]
    private let held: HTTPDNSLock<[Source: Held]>
    private let overlay: HTTPDNSLock<Sink.Overlay>
    private let service: Sink
    private let directory: String?
    private let monitor: any HTTPDNSZoneFollowerMonitor
    /// Serializes rebuilds: two transfers ending together must not swap in an older combination last.
    /// It counts the rebuilds begun: a lock around an empty value let ThreadSanitizer see the
    /// (zero-sized) access outside the mutex, as the optimiser may move it (a report in CI).
    private let building = HTTPDNSLock(0)
    private let listener = HTTPDNSLock<HTTPDNSNotifyListener?>(nil)
    /// Writes the copies, in order, off the cooperative pool.
    private let writer = DispatchQueue(label: "swift-httpdns.zone-copies")

    /// - Parameters:
    ///   - configurations: one per zone followed, and one per zone and view with transfers of its
    ///     own (``HTTPDNSSecondary/Configuration/view``): that transfer is the view's whole zone
    ///     (its names' A and AAAA records are the view's answers; a name it lacks has none in the
    ///     view; a CNAME must be the same as the zone's, the HTTPDNS zone rule).
    ///   - overlay: the JSON zone's names whose checks and views apply to transferred names.
    ///   - directory: where each zone's last good copy is kept (`ZONE.httpdns-zone`), read back
    ///     and put into service here; nil: none. Blocking reads: call this at start-up, before the
    ///     service listens.
    ///   - service: the sink the zones go to (the service).
    ///   - monitor: told of every transfer, refusal and failure (lines on stderr in `httpdns serve`).
    package init(
        _ configurations: [HTTPDNSSecondary.Configuration], overlay: Sink.Overlay, service: Sink,
        directory: String? = nil, monitor: any HTTPDNSZoneFollowerMonitor
    ) {
        self.overlay = HTTPDNSLock(overlay)
        self.service = service
        self.directory = directory
        self.monitor = monitor
        var held: [Source: Held] = [:]
        // The secondaries reach this object weakly: it owns them.
        let relay = HTTPDNSLock(WeakReference())
        secondaries = configurations.map { configuration in
            let restored = directory.flatMap { Self.readCopy(configuration, directory: $0, monitor: monitor) }
            // An expired copy is held too (not served: `/ready` says it expired).
            if let restored { held[Source(configuration)] = Held(accepted: restored.zone, fromDisk: true) }
            return HTTPDNSSecondary(configuration: configuration, restored: restored) { event in
                relay.withLock { $0.value }?.handle(event, source: Source(configuration))
            }
        }
        self.held = HTTPDNSLock(held)
        relay.withLock { $0.value = self }
        let secondaries = self.secondaries
        let heldZones = self.held
        service.setFollowerReadiness {
            var readiness = HTTPDNSFollowerReadiness()
            let zones = heldZones.withLock { $0 }
            for secondary in secondaries {
                let source = Source(secondary.configuration)
                guard let accepted = zones[source]?.accepted else {
                    readiness.notReady.append("loading \(source.text)")
                    continue
                }
                if secondary.isExpired {
                    readiness.notReady.append("expired \(source.text) serial \(accepted.soa.serial): no primary confirmed it within its SOA expire")
                } else if zones[source]?.fromDisk == true {
                    readiness.notes.append("\(source.text) serial \(accepted.soa.serial) from disk: no primary has confirmed it since the start")
                }
            }
            return readiness
        }
        if !held.isEmpty {
            do throws(HTTPDNSFleetError) {
                try rebuild()
                for secondary in secondaries where !secondary.isExpired {
                    let source = Source(secondary.configuration)
                    guard let serial = held[source]?.accepted?.soa.serial else { continue }
                    monitor.zoneFollower(.servedFromCopy(source: source.text, serial: serial))
                }
            } catch {
                monitor.zoneFollower(.copiesRefused(detail: error.detail))
                heldZones.withLock { $0 = [:] }
            }
        }
    }

    /// The file of `zone`'s copy (of `view`'s transfer, if given) in `directory`:
    /// `ZONE.httpdns-zone` or `ZONE+VIEW.httpdns-zone`, each name lower case with any byte other
    /// than a letter, digit, `-`, `_` or `.` as `%XX` (so `+` only ever separates).
    package static func copyPath(_ zone: DNSName, view: String? = nil, directory: String) -> String {
        directory + "/" + fileName(zone.text()) + (view.map { "+" + fileName($0) } ?? "") + ".httpdns-zone"
    }

    private static func fileName(_ text: String) -> String {
        var name = ""
        for byte in text.lowercased().utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."):
                name.append(Character(UnicodeScalar(byte)))
            default:
                name += "%" + String(byte, radix: 16, uppercase: true).leftPadded(to: 2)
            }
        }
        return name
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
    /// - Throws: ``HTTPDNSFleetError`` `.invalidConfiguration` when the address cannot be bound.
    @discardableResult
    package func listenForNotify(on address: SocketAddress) throws(HTTPDNSFleetError) -> SocketAddress {
        let policy = HTTPDNSNotifyPolicy(zones: secondaries.map(\.configuration))
        let relay = HTTPDNSLock(WeakReference(value: self))
        let monitor = self.monitor
        let made = try HTTPDNSNotifyListener(address: address, policy: policy, onNotify: { zone in
            relay.withLock { $0.value }?.notify(zone)
        }, onRefusal: { monitor.zoneFollower(.notifyRefused(reason: $0)) })
        listener.withLock { $0 = made }
        return made.address
    }

    /// Asks the primaries of `zone` now, for the zone and every view's transfer of it (a NOTIFY
    /// for it came); false when no zone of that name is followed.
    @discardableResult
    package func notify(_ zone: DNSName) -> Bool {
        let following = secondaries.filter { $0.configuration.zone == zone }
        for secondary in following { secondary.notify() }
        return !following.isEmpty
    }

    /// A new overlay (SIGHUP): combined with the zones held and swapped in, or refused.
    package func reload(overlay zone: Sink.Overlay) throws(HTTPDNSFleetError) {
        try building.withLock { (rebuilds: inout Int) throws(HTTPDNSFleetError) in
            rebuilds += 1
            _ = try service.serveTransferred(transfers(held.withLock { $0 }), overlay: zone)
            overlay.withLock { $0 = zone }
        }
    }

    /// Blocks until the copies queued so far are on disk (tests, orderly shutdown).
    package func flushCopies() {
        writer.sync {}
    }

    private func handle(_ event: HTTPDNSSecondary.Event, source: Source) {
        let label = source.text
        let zone = source.zone.text()
        switch event {
        case .loaded(let snapshot, let incremental):
            do throws(HTTPDNSFleetError) {
                try building.withLock { (rebuilds: inout Int) throws(HTTPDNSFleetError) in
                    rebuilds += 1
                    var candidate = held.withLock { $0 }
                    candidate[source] = Held(accepted: snapshot)
                    let names = try service.serveTransferred(transfers(candidate), overlay: overlay.withLock { $0 })
                    held.withLock { $0 = candidate }
                    service.countZoneLoad(names: names)
                }
                service.countTransfer(zone, view: source.view, incremental ? .ixfr : .axfr, reasons: [])
                service.countSerial(zone, view: source.view, snapshot.soa.serial)
                monitor.zoneFollower(.loaded(source: label, serial: snapshot.soa.serial, incremental: incremental))
                saveCopy(snapshot, view: source.view)
            } catch {
                service.countZoneLoad(names: nil)
                service.countTransfer(zone, view: source.view, .rejected, reasons: ["checks"])
                monitor.zoneFollower(.refused(source: label, serial: snapshot.soa.serial, detail: error.detail))
            }
        case .current(let serial, let revived):
            service.countTransfer(zone, view: source.view, .current, reasons: [])
            let wasFromDisk = held.withLock { held in
                defer { held[source]?.fromDisk = false }
                return held[source]?.fromDisk ?? false
            }
            if revived { rebuildTelling("zone \(label) serial \(serial) confirmed again after it expired") }
            if wasFromDisk || revived { monitor.zoneFollower(.confirmed(source: label, serial: serial.rawValue)) }
            touchCopy(source)
        case .failed(let failures):
            service.countTransfer(zone, view: source.view, .failed, reasons: failures.map(\.reason))
            monitor.zoneFollower(.failed(source: label, failures: failures.map(\.description)))
        case .expired(let serial):
            service.countSerial(zone, view: source.view, nil)
            rebuildTelling("zone \(label) serial \(serial) expired: no primary confirmed it within its SOA expire; not served")
        }
    }

    /// Swaps in the combination of the zones held now (after an expiry or a revival), telling `change`.
    private func rebuildTelling(_ change: String) {
        do throws(HTTPDNSFleetError) {
            try rebuild()
            monitor.zoneFollower(.rebuilt(change: change, failure: nil))
        } catch {
            service.countZoneLoad(names: nil)
            monitor.zoneFollower(.rebuilt(change: change, failure: error.detail))
        }
    }

    private func rebuild() throws(HTTPDNSFleetError) {
        try building.withLock { (rebuilds: inout Int) throws(HTTPDNSFleetError) in
            rebuilds += 1
            let names = try service.serveTransferred(transfers(held.withLock { $0 }), overlay: overlay.withLock { $0 })
            service.countZoneLoad(names: names)
        }
        for secondary in secondaries {
            let source = Source(secondary.configuration)
            let served = secondary.isExpired ? nil : held.withLock { $0[source]?.accepted }
            service.countSerial(source.zone.text(), view: source.view, served?.soa.serial)
        }
    }

    /// The zones held and not expired, for the sink to combine: every zone's own transfer, then
    /// each view's, once its zone's own is in (until then the view is loading).
    private func transfers(_ held: [Source: Held]) -> [HTTPDNSTransferredZone] {
        var transfers: [HTTPDNSTransferredZone] = []
        let live = secondaries.filter { !$0.isExpired }
        var served: Set<DNSName> = []
        for secondary in live where secondary.configuration.view == nil {
            guard let snapshot = held[Source(secondary.configuration)]?.accepted else { continue }
            transfers.append(HTTPDNSTransferredZone(snapshot))
            served.insert(snapshot.zone)
        }
        for secondary in live where served.contains(secondary.configuration.zone) {
            guard let view = secondary.configuration.view, let snapshot = held[Source(secondary.configuration)]?.accepted else { continue }
            transfers.append(HTTPDNSTransferredZone(snapshot, view: view))
        }
        return transfers
    }

    // MARK: Copies on disk

    /// Reads `configuration`'s copy: the zone and how many seconds ago its file was last touched;
    /// nil when there is none or it is refused (logged).
    private static func readCopy(
        _ configuration: HTTPDNSSecondary.Configuration, directory: String, monitor: any HTTPDNSZoneFollowerMonitor
    ) -> (zone: DNSZoneSnapshot, confirmedAgo: Double)? {
        let path = copyPath(configuration.zone, view: configuration.view, directory: directory)
        let zone = Source(configuration).text
        var info = stat()
        guard lstat(path, &info) == 0 else { return nil }
        guard info.st_mode & S_IFMT == S_IFREG else {
            monitor.zoneFollower(.copyNotUsed(source: zone, reason: "\(path) is not a regular file; not used"))
            return nil
        }
        // The transfer's own byte cap, plus the header line.
        guard Int(info.st_size) <= configuration.limits.maxBytes + 256,
              let data = FileManager.default.contents(atPath: path)
        else {
            monitor.zoneFollower(.copyNotUsed(source: zone, reason: "\(path) cannot be read or is larger than a transfer may be; not used"))
            return nil
        }
        let snapshot: DNSZoneSnapshot
        do throws(DNSZoneCopy.Rejection) {
            snapshot = try DNSZoneCopy.decode(Array(data), zone: configuration.zone, limits: configuration.limits)
        } catch {
            monitor.zoneFollower(.copyNotUsed(source: zone, reason: "the copy in \(path) is not used: \(error.reason)"))
            return nil
        }
        let modified = Double(info.st_mtim.tv_sec) + Double(info.st_mtim.tv_nsec) / 1e9
        let confirmedAgo = max(0, Date().timeIntervalSince1970 - modified)
        if confirmedAgo > Double(snapshot.soa.expire) {
            let ago = Int(confirmedAgo) - Int(snapshot.soa.expire)
            monitor.zoneFollower(.copyNotUsed(
                source: zone, reason: "the copy in \(path) (serial \(snapshot.soa.serial)) expired \(ago) s ago; not served until a primary answers"))
        }
        return (snapshot, confirmedAgo)
    }

    private func saveCopy(_ snapshot: DNSZoneSnapshot, view: String?) {
        guard let directory else { return }
        let path = Self.copyPath(snapshot.zone, view: view, directory: directory)
        let monitor = self.monitor
        writer.async {
            do {
                try HTTPDNSAtomicFile.replace(path, with: try DNSZoneCopy.encode(snapshot), mode: 0o644)
            } catch {
                monitor.zoneFollower(.copyNotWritten(zone: snapshot.zone.text(), path: path, error: "\(error)"))
            }
        }
    }

    /// The primary confirmed the zone: the copy's modification time says when (BIND's way).
    private func touchCopy(_ source: Source) {
        guard let directory else { return }
        let path = Self.copyPath(source.zone, view: source.view, directory: directory)
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
