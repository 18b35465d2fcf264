import Foundation
import HTTPDNS
import HTTPDNSCore
import HTTPDNSTransport

/// The attempts of one exchange at its addresses, and which of them got a connection first.
///
/// Every attempt is a whole transfer whose connect gate (`CURLOPT_PREREQFUNCTION`) asks ``claim(_:_:)``
/// once its connection (and TLS) is ready: the first to ask wins and sends the request; the others
/// never send anything. The bookkeeping of the losers happens inside the claim, on the transport's
/// thread, so the report handed over with the response head already lists the addresses raced past
/// (the winner's connect time is recorded with its head, as for any attempt).
///
/// A loser is slow, not failed: it keeps connecting (``RacedPastAttempts``) and its gate refuses it
/// when it connects; if it fails instead, ``init(engine:report:task:lingering:lostAttemptFailed:)``'s
/// handler books the failure, after the race may long be over. Otherwise an address that a network
/// blackholes would only ever be raced past, never reported (issue 22).
final class ConnectionRace: Sendable {
    enum Event: Sendable {
        /// Attempt `index` ended: its head came, or it failed (or was cancelled).
        case finished(Int, AttemptDelegate.Result)
        /// Attempt `index` has run for the connection attempt delay.
        case delayElapsed(Int)
    }

    enum Role {
        case undecided
        case winner
        case loser
    }

    private struct Racer {
        var address: HTTPDNSIPAddress?
        var started: ContinuousClock.Instant
        var transfer: HTTPTransportTask?
        var lost = false
        var requeued = false
        var finished = false
        /// Whether the attempt asks ``claim(_:_:)`` before its request; one that does not runs alone
        /// and is the request's transfer from the start.
        var gated: Bool
    }

    private struct State {
        var racers: [Int: Racer] = [:]
        var winner: Int?
        var cancelled = false
        var timers: [Task<Void, Never>] = []
    }

    private let state = HTTPDNSLock(State())
    let events: AsyncStream<Event>
    private let continuation: AsyncStream<Event>.Continuation
    private let engine: HTTPDNSEngine
    private let report: HTTPDNSLock<HTTPDNSConnectionReport>
    private let task: HTTPDNSClientTask
    private let lingering: RacedPastAttempts
    private let lostAttemptFailed: @Sendable (HTTPDNSIPAddress, HTTPTransportError) -> Void

    /// - Parameters:
    ///   - lingering: counts the losers still connecting.
    ///   - lostAttemptFailed: called (on the transport's thread) when a loser pinned to an address
    ///     fails rather than connects; never for one cancelled.
    init(
        engine: HTTPDNSEngine, report: HTTPDNSLock<HTTPDNSConnectionReport>, task: HTTPDNSClientTask, lingering: RacedPastAttempts,
        lostAttemptFailed: @escaping @Sendable (HTTPDNSIPAddress, HTTPTransportError) -> Void
    ) {
        (events, continuation) = AsyncStream<Event>.makeStream()
        self.engine = engine
        self.report = report
        self.task = task
        self.lingering = lingering
        self.lostAttemptFailed = lostAttemptFailed
    }

    /// Announces attempt `index` before its transfer starts.
    func add(_ index: Int, address: HTTPDNSIPAddress?, gated: Bool) {
        state.withLock { $0.racers[index] = Racer(address: address, started: .now, gated: gated) }
    }

    /// Records the transfer of attempt `index`; false when it must not run (cancelled, or lost already).
    func register(_ index: Int, _ transfer: HTTPTransportTask) -> Bool {
        let (keep, isWinner) = state.withLock { state -> (Bool, Bool) in
            state.racers[index]?.transfer = transfer
            guard !state.cancelled else { return (false, false) }
            if state.racers[index]?.gated == false { return (true, true) }
            if let winner = state.winner { return (winner == index, winner == index) }
            return (true, false)
        }
        if isWinner { return task.setTransfer(transfer) }
        return keep
    }

    /// The connect gate of attempt `index`: true lets it send its request.
    func claim(_ index: Int, _ connection: HTTPTransportConnection) -> Bool {
        let now = ContinuousClock.now
        let outcome = state.withLock { state -> (winner: Racer, losers: [Racer])? in
            guard !state.cancelled, let racer = state.racers[index] else { return nil }
            if let winner = state.winner { return winner == index ? (racer, []) : nil }
            state.winner = index
            var losers: [Racer] = []
            for (other, loser) in state.racers where other != index && !loser.lost && !loser.finished {
                state.racers[other]?.lost = true
                losers.append(loser)
                // Counted under this lock, so that its end (``finished(_:_:)``) cannot come first.
                if let transfer = loser.transfer { lingering.started(transfer) }
            }
            return (racer, losers)
        }
        guard let (winner, losers) = outcome else { return false }
        // The losers go on connecting (their own gate refuses them, ``register(_:_:)`` a late
        // one); see the type's comment.
        if let transfer = winner.transfer, !task.setTransfer(transfer) { return false }
        let raced = losers.compactMap { loser in loser.address.map { (address: $0, waited: loser.started.duration(to: now)) } }
            .sorted { $0.waited > $1.waited }
        guard !raced.isEmpty else { return true }
        for loser in raced { engine.recordUnfinishedConnect(loser.address, after: loser.waited) }
        report.withLock { report in
            for loser in raced {
                report.attempts.append(.init(
                    address: loser.address, failure: "raced past: not connected after \(HTTPDNSClient.milliseconds(loser.waited)) ms"))
            }
        }
        return true
    }

    func role(of index: Int) -> Role {
        state.withLock { state in
            if state.winner == index { return .winner }
            if state.racers[index]?.lost == true { return .loser }
            return .undecided
        }
    }

    /// The winner failed after connecting: the race is open again. Returns the addresses of the
    /// attempts it had beaten, which never failed and may be tried again (their attempts still
    /// connecting are cancelled: the addresses get new ones).
    func reopen() -> [HTTPDNSIPAddress] {
        let (addresses, transfers) = state.withLock { state -> ([HTTPDNSIPAddress], [HTTPTransportTask]) in
            state.winner = nil
            var beaten: [(ContinuousClock.Instant, HTTPDNSIPAddress)] = []
            var transfers: [HTTPTransportTask] = []
            for (index, racer) in state.racers where racer.lost && !racer.requeued {
                state.racers[index]?.requeued = true
                if let address = racer.address { beaten.append((racer.started, address)) }
                if !racer.finished, let transfer = racer.transfer { transfers.append(transfer) }
            }
            return (beaten.sorted { $0.0 < $1.0 }.map(\.1), transfers)
        }
        for transfer in transfers { transfer.cancel() }
        return addresses
    }

    /// The address attempt `index` was pinned to.
    func address(of index: Int) -> HTTPDNSIPAddress? {
        state.withLock { $0.racers[index]?.address }
    }

    var hasWinner: Bool { state.withLock { $0.winner != nil } }

    /// Cancels every attempt (the request was cancelled or failed for good).
    func cancelAll() {
        let (transfers, timers) = state.withLock { state -> ([HTTPTransportTask], [Task<Void, Never>]) in
            state.cancelled = true
            return (state.racers.values.compactMap(\.transfer), state.timers)
        }
        for transfer in transfers { transfer.cancel() }
        for timer in timers { timer.cancel() }
        continuation.finish()
    }

    /// Attempt `index` ended with `result`.
    func finished(_ index: Int, _ result: AttemptDelegate.Result) {
        // Under the lock with the claim that marks losers: a loser's end is booked here exactly once,
        // and the race's own loop skips it (its role is `loser`).
        let lost = state.withLock { state -> (address: HTTPDNSIPAddress?, transfer: HTTPTransportTask?, lost: Bool) in
            state.racers[index]?.finished = true
            return (state.racers[index]?.address, state.racers[index]?.transfer, state.racers[index]?.lost == true)
        }
        if lost.lost {
            if let transfer = lost.transfer { lingering.ended(transfer) }
            if case .failed(let error) = result, error.code != .cancelled, let address = lost.address {
                lostAttemptFailed(address, error)
            }
        }
        continuation.yield(.finished(index, result))
    }

    /// Reports ``Event/delayElapsed(_:)`` for attempt `index` after `delay`, unless the race ends first.
    func startTimer(_ index: Int, delay: Duration) {
        let continuation = self.continuation
        let timer = Task {
            guard (try? await Task.sleep(for: delay)) != nil else { return }
            continuation.yield(.delayElapsed(index))
        }
        let ended = state.withLock { state -> Bool in
            state.timers.append(timer)
            return state.cancelled
        }
        if ended { timer.cancel() }
    }

    /// Ends the event stream (the winner carries on); attempts still running report into nothing.
    func finish() {
        let timers = state.withLock { state -> [Task<Void, Never>] in
            defer { state.timers.removeAll() }
            return state.timers
        }
        for timer in timers { timer.cancel() }
        continuation.finish()
    }
}
