/// The rules of one ``BlockingCall`` as a value: its caller gets exactly one outcome, the first of
/// the job's result, the timeout and cancellation, and a job whose caller has left never starts.
///
/// Generic over the waiter so that every order of events is tested without tasks or threads;
/// ``BlockingCall`` holds it behind its lock with a `CheckedContinuation`.
struct BlockingCallState<Waiter, Outcome>: Sendable where Waiter: Sendable, Outcome: Sendable {
    /// Hand `outcome` to `waiter` (after the lock is released).
    struct Delivery {
        var waiter: Waiter
        var outcome: Outcome
    }

    /// What to do after an event, in this order: withdraw the job from the pool, then deliver.
    /// Withdrawing first means a caller who sees a timeout or cancellation no longer has a job queued.
    struct Actions {
        var withdraw: UInt64?
        var delivery: Delivery?
    }

    /// The caller's side: an outcome may arrive before the caller has parked its waiter.
    private enum Caller {
        case arriving
        case waiting(Waiter)
        case outcomeKept(Outcome)
        case answered
    }

    /// The job's side.
    private enum Job {
        /// Not yet in the pool's queue, or its ticket is not known yet.
        case unplaced
        case queued(ticket: UInt64)
        case started
    }

    private var caller = Caller.arriving
    private var job = Job.unplaced

    init() {}

    /// True once an outcome has arrived; a running job may stop, a queued one will not start.
    var isFinished: Bool {
        switch caller {
        case .arriving, .waiting: return false
        case .outcomeKept, .answered: return true
        }
    }

    /// The caller parks `waiter`; an outcome that came first is delivered at once.
    mutating func wait(_ waiter: Waiter) -> Delivery? {
        switch caller {
        case .arriving:
            caller = .waiting(waiter)
            return nil
        case .outcomeKept(let outcome):
            caller = .answered
            return Delivery(waiter: waiter, outcome: outcome)
        case .waiting, .answered:
            preconditionFailure("a blocking call has one waiter")
        }
    }

    /// The job's result, the timeout or cancellation. Only the first outcome counts.
    mutating func finish(_ outcome: Outcome) -> Actions {
        var actions = Actions()
        switch caller {
        case .outcomeKept, .answered:
            return actions
        case .arriving:
            caller = .outcomeKept(outcome)
        case .waiting(let waiter):
            caller = .answered
            actions.delivery = Delivery(waiter: waiter, outcome: outcome)
        }
        if case .queued(let ticket) = job { actions.withdraw = ticket }
        return actions
    }

    /// A timeout that only limits waiting in the queue: ignored once the job has started (the job
    /// then keeps its own deadline).
    mutating func expire(_ outcome: Outcome) -> Actions {
        if case .started = job { return Actions() }
        return finish(outcome)
    }

    /// The pool has queued the job under `ticket`.
    ///
    /// - Returns: whether to withdraw it at once: the caller left before the ticket was known.
    mutating func queued(ticket: UInt64) -> Bool {
        // A worker may have started the job before its ticket got here.
        guard case .unplaced = job else { return false }
        if isFinished { return true }
        job = .queued(ticket: ticket)
        return false
    }

    /// A worker is about to run the job. Returns false, and the job must be skipped, when its
    /// caller has already had an outcome.
    mutating func start() -> Bool {
        if isFinished { return false }
        job = .started
        return true
    }
}
