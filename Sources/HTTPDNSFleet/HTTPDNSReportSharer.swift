import Dispatch
import Foundation
import HTTPDNSCore

/// Shares one instance's report state through Redis: the outbox and health in a
/// ``HTTPDNSReportSharing`` value behind a lock, and one thread of its own that does all the Redis
/// I/O (hiredis blocks; it never runs on the cooperative pool, and no query ever waits for it).
///
/// Each round the thread sends the pending reports and decisions and the poll in one pipeline,
/// reads the decisions when their version moved, hands the fleet's sightings and decisions back
/// through ``Sink``, then sleeps for the poll
/// interval (or less, when more work arrives). A failed round puts its work back (bounded), drops
/// the connection, counts the error and waits out the backoff; the first round that works again
/// re-publishes the decisions in force here.
package final class HTTPDNSReportSharer: Sendable {
    /// Where the sharer delivers what it read; called on the sharer's thread.
    package struct Sink: Sendable {
        /// The fleet's sightings of a reported pair, after this instance shared `report`.
        package var merge: @Sendable (HTTPDNSReportSharing.Report, [HTTPDNSReportSharing.Sighting]) -> Void
        /// The decisions in force in the fleet.
        package var adopt: @Sendable ([HTTPDNSReportDecision]) -> Void
        /// This instance's decisions in force, to re-publish after Redis was away.
        package var inForce: @Sendable () -> [HTTPDNSReportDecision]

        package init(
            merge: @escaping @Sendable (HTTPDNSReportSharing.Report, [HTTPDNSReportSharing.Sighting]) -> Void,
            adopt: @escaping @Sendable ([HTTPDNSReportDecision]) -> Void,
            inForce: @escaping @Sendable () -> [HTTPDNSReportDecision]
        ) {
            self.merge = merge
            self.adopt = adopt
            self.inForce = inForce
        }
    }

    private struct State: Sendable {
        var sharing: HTTPDNSReportSharing
        var stopping = false
        var running = false
        var errors: [String: UInt64] = [:]
        var lastError: HTTPDNSRedisError?
    }

    /// Reports sent per round at most (4 commands each), so one round stays within the command timeout.
    static let reportsPerRound = 128

    let settings: HTTPDNSRedisSettings
    private let clock: any HTTPDNSClock
    /// The backoff's clock: monotonic, so that a stepped wall clock neither stalls nor rushes it.
    private let uptime: any HTTPDNSClock
    private let state: HTTPDNSLock<State>
    private let wake = DispatchSemaphore(value: 0)
    private let stopped = DispatchSemaphore(value: 0)

    /// - Parameters:
    ///   - clock: the wall clock of reports and decisions (shared with the other instances).
    ///   - uptime: the backoff's clock. Default ``HTTPDNSUptimeClock``; tests pass a manual one.
    package init(
        settings: HTTPDNSRedisSettings, sharing: HTTPDNSReportSharing, clock: any HTTPDNSClock,
        uptime: any HTTPDNSClock = HTTPDNSUptimeClock()
    ) {
        self.settings = settings
        self.clock = clock
        self.uptime = uptime
        self.state = HTTPDNSLock(State(sharing: sharing))
    }

    /// Starts the thread; calling it again while running does nothing.
    package func start(_ sink: Sink) {
        let start = state.withLock { state -> Bool in
            guard !state.running else { return false }
            state.running = true
            state.stopping = false
            return true
        }
        guard start else { return }
        let thread = Thread { [self] in run(sink) }
        thread.name = "httpdns redis"
        thread.start()
    }

    /// Stops the thread and waits for it (at most one command timeout plus one connect timeout).
    /// Safe to call twice.
    package func stop() {
        let wasRunning = state.withLock { state -> Bool in
            guard state.running, !state.stopping else { return false }
            state.stopping = true
            return true
        }
        guard wasRunning else { return }
        wake.signal()
        stopped.wait()
    }

    /// Queues an accepted report to share; never blocks.
    package func share(_ report: HTTPDNSReportSharing.Report) {
        state.withLock { $0.sharing.enqueue(report) }
        wake.signal()
    }

    /// Queues decisions made here to publish; never blocks.
    package func publish(_ decisions: [HTTPDNSReportDecision]) {
        guard !decisions.isEmpty else { return }
        state.withLock { state in
            for decision in decisions { state.sharing.enqueue(decision) }
        }
        wake.signal()
    }

    /// Whether the last exchange with Redis worked.
    package var isUp: Bool { state.withLock { $0.sharing.up } }
    /// Failed exchanges by ``HTTPDNSRedisError/Code``, in all.
    package var errors: [String: UInt64] { state.withLock { $0.errors } }
    /// The latest failure (for logs and tests).
    package var lastError: HTTPDNSRedisError? { state.withLock { $0.lastError } }
    /// Whether reports or decisions wait to be written to Redis (false once a round has written them).
    package var hasPending: Bool { state.withLock { $0.sharing.hasPending } }
    /// Reports and decisions dropped because the outbox was full, in all.
    package var dropped: Int { state.withLock { $0.sharing.dropped } }

    private func monotonic() -> Double {
        uptime.now()
    }

    private func run(_ sink: Sink) {
        var connection: HTTPDNSRedisConnection?
        defer {
            connection = nil
            state.withLock { $0.running = false }
            stopped.signal()
        }
        while true {
            let (stopping, mayConnect, retryAt) = state.withLock { ($0.stopping, $0.sharing.mayConnect(now: monotonic()), $0.sharing.retryAt) }
            if stopping { return }
            if connection == nil {
                guard mayConnect else {
                    _ = wake.wait(timeout: .now() + max(0.001, retryAt - monotonic()))
                    continue
                }
                do {
                    connection = try HTTPDNSRedisConnection(settings)
                } catch {
                    failed(error)
                    continue
                }
            }
            guard let open = connection else { continue }
            do {
                try round(open, sink)
            } catch {
                connection = nil
                failed(error)
                continue
            }
            let more = state.withLock { $0.sharing.hasPending }
            if !more { _ = wake.wait(timeout: .now() + settings.pollInterval.inSeconds) }
        }
    }

    private func failed(_ error: HTTPDNSRedisError) {
        state.withLock { state in
            state.errors[error.code.description, default: 0] &+= 1
            state.lastError = error
            state.sharing.failed(now: monotonic())
        }
    }

    /// One exchange: pending reports and decisions, then the poll.
    private func round(_ connection: HTTPDNSRedisConnection, _ sink: Sink) throws(HTTPDNSRedisError) {
        let now = clock.now()
        let (sharing, batch) = state.withLock { state in (state.sharing, state.sharing.take(limit: Self.reportsPerRound)) }
        var commands: [[String]] = []
        for report in batch.reports { commands += sharing.commands(for: report) }
        for decision in batch.decisions { commands += sharing.commands(for: decision, now: now) }
        commands.append(sharing.pollCommand)
        let replies: [HTTPDNSRedisReply]
        do {
            replies = try connection.pipeline(commands)
        } catch {
            state.withLock { $0.sharing.putBack(reports: batch.reports, decisions: batch.decisions) }
            throw error
        }
        if case .error(let message) = replies[replies.count - 1] {
            // The poll refused (NOAUTH: a password is missing; LOADING: Redis is starting): not up.
            state.withLock { $0.sharing.putBack(reports: batch.reports, decisions: batch.decisions) }
            throw HTTPDNSRedisError(.reply, String(message.prefix { $0 != " " }))
        }
        let wasDown = state.withLock { $0.sharing.succeeded() }
        if let error = replies.first(where: { if case .error = $0 { true } else { false } }), case .error(let message) = error {
            // Redis answered, but refused a command (out of memory, a key of another type): count it,
            // keep the connection; what was refused is not retried.
            let refused = HTTPDNSRedisError(.reply, String(message.prefix { $0 != " " }))
            state.withLock { state in
                state.errors[refused.code.description, default: 0] &+= 1
                state.lastError = refused
            }
        }
        for (index, report) in batch.reports.enumerated() {
            if let sightings = HTTPDNSReportSharing.sightings(replies[index * 4 + 3]) { sink.merge(report, sightings) }
        }
        if state.withLock({ $0.sharing.versionChanged(replies[replies.count - 1]) }) {
            let read = try connection.pipeline([sharing.readCommand(now: clock.now())])
            if let decisions = HTTPDNSReportSharing.decisions(read[0]), !decisions.isEmpty { sink.adopt(decisions) }
        }
        if wasDown { publish(sink.inForce()) }
    }
}
