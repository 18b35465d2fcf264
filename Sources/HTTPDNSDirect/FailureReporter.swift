import Foundation
@_spi(HTTPDNSPackage) import HTTPDNSCore
import HTTPDNSTransport

/// Queues the failure reports of one client (or proxy) and sends them to the report endpoint from
/// a task of its own, so that no request ever waits on a report.
///
/// Queueing is a locked append, from whatever thread saw the failure (the transport's, a proxy
/// task). The sender task sleeps while nothing waits, and otherwise sends a batch whenever
/// ``FailureReportQueue`` says one may go. Releasing the reporter (with the client or proxy that
/// owns it) cancels the task: a send in flight is cancelled and what still waits is dropped.
package final class FailureReporter: Sendable {
    /// What the sender task shares with the reporter; it never holds the reporter itself, so the
    /// reporter's release is what stops it.
    private final class Core: Sendable {
        let queue: HTTPDNSLock<FailureReportQueue>
        let settings: HTTPDNSFailureReports
        let transport: HTTPTransport
        let trust: HTTPDNSTrust
        let clock: any HTTPDNSClock
        let monitor: (any HTTPDNSConnectionMonitor)?
        let wake: AsyncStream<Void>.Continuation
        let origin = ContinuousClock.now

        init(
            settings: HTTPDNSFailureReports, transport: HTTPTransport, trust: HTTPDNSTrust, clock: any HTTPDNSClock,
            monitor: (any HTTPDNSConnectionMonitor)?, wake: AsyncStream<Void>.Continuation
        ) {
            let interval = max(settings.interval, .milliseconds(10))
            self.queue = HTTPDNSLock(FailureReportQueue(
                capacity: settings.queueCapacity, maxBatch: min(max(settings.maxBatch, 1), 50), interval: interval.reportSeconds))
            self.settings = settings
            self.transport = transport
            self.trust = trust
            self.clock = clock
            self.monitor = monitor
            self.wake = wake
        }

        /// Seconds since the reporter was made, on a monotonic clock: the queue's `now`.
        var now: Double { origin.duration(to: .now).reportSeconds }

        func run(_ wakes: AsyncStream<Void>) async {
            var wakeups = wakes.makeAsyncIterator()
            while !Task.isCancelled {
                let step = queue.withLock { $0.next(now: now) }
                switch step {
                case .idle:
                    guard await wakeups.next() != nil else { return }
                case .wait(let seconds):
                    guard (try? await Task.sleep(for: .milliseconds(Int64((seconds * 1000).rounded(.up))))) != nil else { return }
                case .send(let batch):
                    let outcome = await send(batch)
                    if Task.isCancelled { return }
                    finished(batch, outcome)
                }
            }
        }

        func finished(_ batch: [FailureReport], _ outcome: FailureReportQueue.Outcome) {
            let (dropped, total, waiting) = queue.withLock { queue in
                (queue.finished(batch, outcome, now: now), queue.dropped, queue.count > 0)
            }
            // A batch ``flush(within:)`` put back must not wait for the next report to wake the task.
            if waiting { wake.yield() }
            if dropped > 0 { monitor?.failureReportsDropped(count: dropped, total: total) }
        }

        /// One report request, within `limit`; how it ended.
        func send(_ batch: [FailureReport], limit: Duration = .seconds(30)) async -> FailureReportQueue.Outcome {
            let body = FailureReport.body(batch)
            let wallNow = clock.now()
            var request = HTTPTransportRequest(url: settings.endpoint, method: "POST", body: .data(Data(body)), trust: trust)
            request.headers = [
                HTTPTransportHeader(name: "Content-Type", value: "application/json"),
                HTTPTransportHeader(name: "Authorization", value: FailureReport.authorization(settings.credential, body: body, now: wallNow)),
            ]
            request.timeouts = .init(connect: min(.seconds(10), limit), total: limit, idle: limit)
            request.maxResponseBytes = 64 << 10
            do {
                let response = try await transport.send(request)
                switch response.statusCode {
                case 200..<300:
                    return .accepted
                case 429, 503:
                    let header = response.headers.last { HTTPDNSASCII.equalsIgnoringCase($0.name, "retry-after") }?.value
                    // At most an hour: a wrong header must not silence the reports for good.
                    return .retry(after: FailureReport.retryAfter(header, now: wallNow).map { min($0, 3600) })
                case 400..<500:
                    return .rejected
                default:
                    return .retry(after: nil)
                }
            } catch {
                // A request that can never be made (a bad URL, a credential with a line break) is dropped.
                return error.code == .badURL || error.code == .invalidRequest ? .rejected : .retry(after: nil)
            }
        }
    }

    private let core: Core
    private let task: Task<Void, Never>

    /// Starts the sender task.
    ///
    /// - Parameters:
    ///   - settings: the endpoint, credential and bounds (the interval at least 10 ms, a batch of
    ///     1 to 50, a queue of at least 1).
    ///   - transport: sends the report requests (straight to the endpoint: no pinning, no failover).
    ///   - trust: the CAs that verify the endpoint (the engine's).
    ///   - clock: wall time for the reports' `time` and the signature's expiry.
    ///   - monitor: told of dropped reports.
    package init(
        settings: HTTPDNSFailureReports, transport: HTTPTransport, trust: HTTPDNSTrust, clock: any HTTPDNSClock,
        monitor: (any HTTPDNSConnectionMonitor)?
    ) {
        let (wakes, wake) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        let core = Core(settings: settings, transport: transport, trust: trust, clock: clock, monitor: monitor, wake: wake)
        self.core = core
        self.task = Task { await core.run(wakes) }
    }

    deinit {
        task.cancel()
        core.wake.finish()
    }

    /// Queues a report of `address` failing for `host`:`port` with `error`, timed now.
    package func record(host: String, address: HTTPDNSIPAddress, port: Int, error: HTTPDNSReportWire.ErrorClass) {
        let report = FailureReport(host: host, address: address, port: port, error: error, time: Int64(core.clock.now().rounded(.down)))
        let now = core.now
        let (dropped, total) = core.queue.withLock { queue in (queue.append(report, now: now), queue.dropped) }
        core.wake.yield()
        if dropped > 0 { core.monitor?.failureReportsDropped(count: dropped, total: total) }
    }

    /// Sends what waits without the gathering wait (still at most one request per interval), and
    /// returns once nothing waits or is in flight, or after `limit`: for a process about to exit
    /// (`httpdns fetch`, a stopping `httpdns proxy`). What is left then is lost.
    package func flush(within limit: Duration) async {
        let deadline = ContinuousClock.now + limit
        while ContinuousClock.now < deadline, !Task.isCancelled {
            let now = core.now
            let step = core.queue.withLock { $0.next(now: now, skippingGather: true) }
            let remaining = ContinuousClock.now.duration(to: deadline)
            switch step {
            case .send(let batch):
                core.finished(batch, await core.send(batch, limit: max(remaining, .milliseconds(100))))
            case .idle where core.queue.withLock({ $0.inFlight == 0 }):
                return
            case .idle:
                // The sender task's request is under way.
                try? await Task.sleep(for: .milliseconds(20))
            case .wait(let seconds):
                guard Duration.milliseconds(Int64(seconds * 1000)) < remaining else { return }
                try? await Task.sleep(for: .milliseconds(Int64((seconds * 1000).rounded(.up))))
            }
        }
    }

    /// Reports dropped so far: pushed out of the full queue, or refused for good by the endpoint.
    package var droppedCount: Int { core.queue.withLock { $0.dropped } }
    /// Reports the endpoint accepted so far.
    package var acceptedCount: Int { core.queue.withLock { $0.accepted } }
    /// Reports waiting to be sent.
    package var queuedCount: Int { core.queue.withLock { $0.count } }
    /// Report requests made so far.
    package var requestCount: Int { core.queue.withLock { $0.requests } }
}

extension Duration {
    /// The duration in seconds, fractions included.
    fileprivate var reportSeconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
