import Dispatch
import Foundation
import HTTPDNSCore

/// A fixed number of threads for blocking calls, started as they are needed, and a bounded FIFO
/// queue of the jobs that wait for one (house style §7 and §18).
///
/// Why threads of its own: a job blocks in the kernel (`getaddrinfo`, `poll`) for up to its caller's
/// timeout. On Swift's cooperative pool that would starve every other task; on Dispatch's global
/// queues it would make libdispatch add threads for the blocked ones, the unbounded growth this
/// type exists to stop. A thread per call, as before, let a burst of 10,000 lookups start thousands.
///
/// Workers park between jobs and stay for the life of the process, as swift-nio's `NIOThreadPool`
/// does: a parked thread costs the stack pages it touched, and a pool that shrank would pay for
/// starting threads again at the next burst.
final class BlockingPool: Sendable {
    typealias Job = @Sendable () -> Void

    /// The workers' thread name (Linux keeps 15 bytes of it).
    let name: String
    private let state: HTTPDNSLock<BlockingPoolState<Job>>
    /// One signal per parked worker woken by `submit`; see ``BlockingPoolState/parked``.
    private let wakeups = DispatchSemaphore(value: 0)

    /// - Parameters:
    ///   - name: the workers' thread name.
    ///   - threadLimit: most worker threads.
    ///   - queueLimit: most jobs waiting while every worker is busy; more are rejected.
    init(name: String, threadLimit: Int, queueLimit: Int) {
        self.name = name
        state = HTTPDNSLock(BlockingPoolState(threadLimit: threadLimit, queueLimit: queueLimit))
    }

    var threadLimit: Int { state.withLock { $0.threadLimit } }
    var queueLimit: Int { state.withLock { $0.queueLimit } }
    /// Worker threads started so far.
    var threadCount: Int { state.withLock { $0.threads } }
    /// Jobs waiting for a worker.
    var queuedCount: Int { state.withLock { $0.queuedCount } }

    /// Queues `job` for the next free worker, starting or waking one when the pool has room.
    ///
    /// - Returns: the ticket to ``withdraw(_:)`` the job with, or `nil` when the queue is full and
    ///   the job will never run.
    func submit(_ job: @escaping Job) -> UInt64? {
        switch state.withLock({ $0.submit(job) }) {
        case .queuedStartingWorker(let ticket):
            let thread = Thread { [self] in work() }
            thread.name = name
            thread.start()
            return ticket
        case .queuedWakingWorker(let ticket):
            wakeups.signal()
            return ticket
        case .queued(let ticket):
            return ticket
        case .rejected:
            return nil
        }
    }

    /// Takes a job out of the queue unless a worker has taken it already.
    ///
    /// - Returns: whether the job was still queued (it will now never run).
    @discardableResult
    func withdraw(_ ticket: UInt64) -> Bool {
        // The job is released after the lock: it may hold the last reference to its caller's state.
        let job = state.withLock { $0.withdraw(ticket) }
        return job != nil
    }

    private func work() -> Never {
        while true { runNext() }
    }

    /// Runs the oldest queued job, parking until there is one. A function of its own so that the job
    /// (and whatever it holds) is released before the worker parks again.
    private func runNext() {
        while true {
            switch state.withLock({ $0.next() }) {
            case .run(let job):
                job()
                return
            case .park:
                wakeups.wait()
            }
        }
    }
}

extension BlockingPool {
    /// The backstop on each shared pool's queue. Every queued job belongs to a caller that is still
    /// waiting (a caller who times out or is cancelled withdraws its job at once) and whose timeout
    /// bounds the wait, so the queue is bounded by the callers alive; the limit only turns a flood of
    /// callers into quick `.transport` failures instead of waits that could only end in timeouts.
    /// 16,384 entries are a few MB at most, and above any burst the tests or the engine make.
    static let sharedQueueLimit = 16_384

    /// `getaddrinfo` for ``DNSSystemResolver``.
    ///
    /// Lookups and exchanges have separate pools because they block differently: `getaddrinfo`
    /// cannot be interrupted and may take the system resolver's whole retry schedule (tens of seconds
    /// with several unreachable name servers), while an exchange stops within one poll slice of its
    /// deadline or its caller leaving. In one pool, a few hung lookups would hold every thread and
    /// leave plain-DNS exchanges (a LocalDNS fallback of their own) queued until they time out.
    static let lookups = BlockingPool(
        name: "DNS lookup", threadLimit: DNSSystemResolver.threadLimit, queueLimit: sharedQueueLimit)

    /// Zone transfers (``DNSZoneTransferClient``): seconds long each, so apart from the exchanges
    /// that answer queries; a secondary runs one per zone at a time.
    static let transfers = BlockingPool(name: "zone transfer", threadLimit: 8, queueLimit: 1_024)

    /// Socket exchanges for ``DNSSocketClient``; see ``lookups`` for why the pools are separate.
    static let exchanges = BlockingPool(
        name: "DNS exchange", threadLimit: DNSSocketClient.threadLimit, queueLimit: sharedQueueLimit)
}
