import DNSSockets
import DNSWire
import DNSZoneTransfer
import HTTPDNSCore

/// Follows one zone on its primaries as a secondary does (RFC 1034 §4.3.5): a full transfer
/// (AXFR) first, then incremental ones (IXFR, falling back to AXFR when the primary cannot give
/// one), at the SOA's REFRESH, at RETRY after a failure, and at once on ``notify()`` (a NOTIFY from
/// the primary, RFC 1996). Each new zone goes to `onEvent` (the service swaps it in); a zone whose
/// serial is not newer than the one held (RFC 1982) is refused and the held one kept. A zone the
/// primaries have not confirmed for its SOA EXPIRE expires (``Event/expired``) and is not served
/// until one does.
///
/// The I/O is ``DNSZoneTransferClient``'s (a thread of its own per transfer, never the cooperative
/// pool); the timing is ``HTTPDNSSecondaryTimers``'; this class is the loop between them.
package final class HTTPDNSSecondary: Sendable {
    package struct Configuration: Sendable {
        /// The zone's apex.
        package var zone: DNSName
        /// The primaries, asked in order until one answers.
        package var primaries: [SocketAddress]
        /// The TSIG key of transfers; nil: unsigned.
        package var key: DNSTSIGKey?
        /// Caps on one transfer's size.
        package var limits = DNSZoneTransfer.Limits()
        /// One transfer's deadline. Default 30 s.
        package var transferTimeout: Duration = .seconds(30)
        /// Bounds and defaults of the timers.
        package var timers = HTTPDNSSecondaryTimers()
        /// The view whose records this transfer gives (its key selects the primary's view); nil:
        /// the zone every client gets unless its view has its own.
        package var view: String?

        package init(zone: DNSName, primaries: [SocketAddress], key: DNSTSIGKey? = nil) {
            self.zone = zone
            self.primaries = primaries
            self.key = key
        }
    }

    /// Why one primary gave no usable zone.
    package struct Failure: Sendable, CustomStringConvertible {
        /// The primary asked.
        package var primary: SocketAddress
        /// A short stable name for metrics: a ``DNSZoneTransferError`` code (`tsig`, `tooLarge`,
        /// `incomplete`, `serverError`…), `transport`, or `serialNotNewer`.
        package var reason: String
        /// The whole finding, for the log.
        package var detail: String

        package var description: String { "\(primary): \(detail)" }
    }

    /// What an attempt, or the passing of time, found.
    package enum Event: Sendable {
        /// A new zone, by full or incremental transfer.
        case loaded(DNSZoneSnapshot, incremental: Bool)
        /// The primary confirmed the serial held; `revived` when the zone had expired and is
        /// served again.
        case current(DNSSerial, revived: Bool)
        /// No primary gave a usable zone (each one's reason, in order); the zone held stays.
        case failed([Failure])
        /// The zone held went unconfirmed past its SOA EXPIRE: no longer served.
        case expired(DNSSerial)
    }

    private struct State {
        var timers: HTTPDNSSecondaryTimers
        var current: DNSZoneSnapshot?
        /// `current` expired (and ``Event/expired`` was sent).
        var expired = false
        var preferAXFR = false
        var stopped = false
        var woken = false
        var waiter: CheckedContinuation<Void, Never>?
        var timer: Task<Void, Never>?
        var loop: Task<Void, Never>?
    }

    package let configuration: Configuration
    private let state: HTTPDNSLock<State>
    private let onEvent: @Sendable (Event) -> Void
    private let origin = ContinuousClock.now

    /// - Parameters:
    ///   - restored: a zone to start from (the last good copy from disk) and how long ago the
    ///     primary last confirmed it, in seconds: it expires as it would have, and is refreshed by
    ///     IXFR at once.
    ///   - onEvent: called on the secondary's task after each attempt.
    package init(
        configuration: Configuration, restored: (zone: DNSZoneSnapshot, confirmedAgo: Double)? = nil,
        onEvent: @escaping @Sendable (Event) -> Void
    ) {
        self.configuration = configuration
        var timers = configuration.timers
        var expired = false
        if let restored {
            // `origin` is now: the confirmation lies `confirmedAgo` seconds before it.
            timers.restored(restored.zone.soa, confirmedAt: -max(0, restored.confirmedAgo))
            expired = timers.isExpired(now: 0)
        }
        self.state = HTTPDNSLock(State(timers: timers, current: restored?.zone, expired: expired))
        self.onEvent = onEvent
    }

    deinit {
        stop()
    }

    /// The zone held, nil before the first transfer (an expired one included: IXFR starts there).
    package var current: DNSZoneSnapshot? { state.withLock { $0.current } }

    /// The zone to answer from: the one held unless it expired.
    package var served: DNSZoneSnapshot? { state.withLock { $0.expired ? nil : $0.current } }

    /// Whether the zone held has gone unconfirmed past its SOA EXPIRE.
    package var isExpired: Bool { state.withLock { $0.expired } }

    /// Starts following the zone (the first attempt at once).
    package func start() {
        let task = Task { [weak self] in
            guard let self else { return }
            await self.run()
        }
        state.withLock { $0.loop = task }
    }

    /// Asks the primary now (a NOTIFY came).
    package func notify() {
        let now = seconds()
        state.withLock { $0.timers.notified(now: now) }
        wake()
    }

    /// Stops following; a transfer in flight finishes in the background and is ignored.
    package func stop() {
        let (loop, timer) = state.withLock { state -> (Task<Void, Never>?, Task<Void, Never>?) in
            state.stopped = true
            return (state.loop, state.timer)
        }
        loop?.cancel()
        timer?.cancel()
        wake()
    }

    private func seconds() -> Double {
        let elapsed = ContinuousClock.now - origin
        return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    }

    private func run() async {
        while true {
            let now = seconds()
            let (stopped, due, expiredNow) = state.withLock { state -> (Bool, Double, DNSSerial?) in
                // The expiry is a deadline of its own: a RETRY longer than EXPIRE must not delay it.
                if !state.expired, let current = state.current, state.timers.isExpired(now: now) {
                    state.expired = true
                    return (state.stopped, state.timers.nextAttempt, current.serial)
                }
                let expiry = state.expired ? nil : state.timers.expiresAt
                return (state.stopped, min(state.timers.nextAttempt, expiry.map { $0 + 0.001 } ?? .infinity), nil)
            }
            if stopped { return }
            if let expiredNow {
                onEvent(.expired(expiredNow))
                continue
            }
            guard now >= due else {
                await pause(for: due - now)
                continue
            }
            let event = await attempt()
            if state.withLock({ $0.stopped }) { return }
            onEvent(event)
        }
    }

    /// One attempt over the primaries in order; updates the zone held and the timers.
    private func attempt() async -> Event {
        let (current, preferAXFR) = state.withLock { state in
            state.timers.attemptStarted()
            return (state.current, state.preferAXFR)
        }
        var reasons: [Failure] = []
        for primary in configuration.primaries {
            var client = DNSZoneTransferClient(primary: primary, key: configuration.key)
            client.timeout = configuration.transferTimeout
            let id = DNSSocketClient.randomID()
            let transfer = current.map { preferAXFR ? DNSZoneTransfer(axfr: $0.zone, id: id, limits: configuration.limits)
                : DNSZoneTransfer(ixfr: $0, id: id, limits: configuration.limits) }
                ?? DNSZoneTransfer(axfr: configuration.zone, id: id, limits: configuration.limits)
            let result: DNSZoneTransfer.Result
            do {
                result = try await client.run(transfer)
            } catch {
                let reason = switch error {
                case .transport: "transport"
                case .transfer(let failure): failure.code.description
                }
                reasons.append(Failure(primary: primary, reason: reason, detail: "\(error)"))
                // A primary that cannot serve an increment (no journal, NOTIMP, a broken IXFR) gets
                // a full transfer next.
                if current != nil, !preferAXFR, case .transfer = error { state.withLock { $0.preferAXFR = true } }
                continue
            }
            let now = seconds()
            switch result {
            case .upToDate(let soa):
                return confirmed(soa, now: now)
            case .full(let snapshot), .incremental(let snapshot):
                let incremental = if case .incremental = result { true } else { false }
                if let current, !snapshot.serial.isGreater(than: current.serial) {
                    if snapshot.serial == current.serial { return confirmed(snapshot.soa, now: now) }
                    reasons.append(Failure(
                        primary: primary, reason: "serialNotNewer",
                        detail: "serial \(snapshot.soa.serial) is not newer than \(current.soa.serial) (RFC 1982)"))
                    continue
                }
                state.withLock { state in
                    state.current = snapshot
                    state.expired = false
                    state.preferAXFR = false
                    state.timers.succeeded(snapshot.soa, now: now)
                }
                return .loaded(snapshot, incremental: incremental)
            }
        }
        let now = seconds()
        state.withLock { $0.timers.failed(now: now) }
        return .failed(reasons)
    }

    /// The primary says the zone held (with `soa`) is current.
    private func confirmed(_ soa: DNSSOA, now: Double) -> Event {
        let revived = state.withLock { state in
            state.timers.succeeded(soa, now: now)
            defer { state.expired = false }
            return state.expired
        }
        return .current(soa.serialNumber, revived: revived)
    }

    /// Sleeps for `seconds`, or until ``notify()`` or ``stop()``.
    private func pause(for seconds: Double) async {
        let deadline = ContinuousClock.now + .milliseconds(Int64(max(0, seconds) * 1000))
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let resumeNow = state.withLock { state -> Bool in
                if state.woken || state.stopped {
                    state.woken = false
                    return true
                }
                state.waiter = continuation
                state.timer?.cancel()
                state.timer = Task { [weak self] in
                    try? await Task.sleep(until: deadline, clock: .continuous)
                    guard !Task.isCancelled else { return }
                    self?.wake()
                }
                return false
            }
            if resumeNow { continuation.resume() }
        }
    }

    private func wake() {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard let waiter = state.waiter else {
                state.woken = true
                return nil
            }
            state.waiter = nil
            return waiter
        }
        waiter?.resume()
    }
}
