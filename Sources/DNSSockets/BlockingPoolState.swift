/// The bookkeeping of a ``BlockingPool``: how many worker threads exist, how many are parked, and
/// the FIFO queue of jobs waiting for one. A value with no threads of its own, so that every path
/// is tested without any (the pool applies the actions it returns).
///
/// Jobs wait under a ticket so that a caller who leaves (timeout, cancellation) takes its job out
/// of the queue at once: the queue then only holds jobs whose callers still wait, and a queue
/// stuck behind slow jobs does not fill with the leftovers of callers who gave up.
struct BlockingPoolState<Job: Sendable>: Sendable {
    /// What the pool does after a job is submitted. Every accepted job waits under a ticket, even one
    /// that a worker is woken or started for: the oldest job always goes first, and a caller can
    /// withdraw its job until a worker has taken it.
    enum Submission: Equatable {
        /// Start a new worker thread; it takes the oldest job.
        case queuedStartingWorker(ticket: UInt64)
        /// Wake a parked worker; it takes the oldest job.
        case queuedWakingWorker(ticket: UInt64)
        /// Every worker is busy and the first one free takes the oldest job.
        case queued(ticket: UInt64)
        /// The queue is full; the job was not taken.
        case rejected
    }

    /// What a worker that is free does next.
    enum Next {
        case run(Job)
        /// Wait for a wake-up (the worker now counts as parked).
        case park
    }

    /// Most worker threads; more jobs wait in the queue.
    let threadLimit: Int
    /// Most jobs waiting for a busy pool; more are rejected. Jobs that a worker is being woken or
    /// started for wait in the queue too (one per such worker), so it holds at most
    /// `queueLimit + threadLimit` jobs.
    let queueLimit: Int
    /// Worker threads started so far (they are never stopped).
    private(set) var threads = 0
    /// Workers parked without a wake-up on its way to them. A wake-up is a count, not a message to
    /// one worker: whichever parked worker takes it then looks at the queue.
    private(set) var parked = 0
    /// Queued jobs by ticket. Tickets rise in submission order, so the smallest is the oldest.
    private var waiting: [UInt64: Job] = [:]
    /// No ticket below `head` is still queued.
    private var head: UInt64 = 0
    /// The next ticket to hand out.
    private var tail: UInt64 = 0

    init(threadLimit: Int, queueLimit: Int) {
        precondition(threadLimit > 0 && queueLimit >= 0, "a pool needs a thread and a non-negative queue")
        self.threadLimit = threadLimit
        self.queueLimit = queueLimit
    }

    /// Jobs waiting for a worker.
    var queuedCount: Int { waiting.count }

    /// A caller hands over `job`.
    ///
    /// A parked worker is preferred to a new one, so the pool grows only while every worker is busy.
    mutating func submit(_ job: Job) -> Submission {
        if parked > 0 {
            parked -= 1
            return .queuedWakingWorker(ticket: enqueue(job))
        }
        if threads < threadLimit {
            threads += 1
            return .queuedStartingWorker(ticket: enqueue(job))
        }
        guard waiting.count < queueLimit else { return .rejected }
        return .queued(ticket: enqueue(job))
    }

    /// A worker has finished its job (or has just been woken): the oldest queued job, or park.
    mutating func next() -> Next {
        while head < tail {
            let ticket = head
            head += 1
            if let job = waiting.removeValue(forKey: ticket) { return .run(job) }
        }
        parked += 1
        return .park
    }

    /// Takes the job with `ticket` out of the queue; `nil` when a worker has already taken it.
    ///
    /// A wake-up sent for the job stays sent; the worker it wakes finds another job or parks again.
    mutating func withdraw(_ ticket: UInt64) -> Job? {
        let job = waiting.removeValue(forKey: ticket)
        // Withdrawn tickets are skipped one by one in `next()`; when nothing is left, skip them all.
        if waiting.isEmpty { head = tail }
        return job
    }

    private mutating func enqueue(_ job: Job) -> UInt64 {
        let ticket = tail
        tail += 1
        waiting[ticket] = job
        return ticket
    }
}
