@testable import DNSSockets
import XCTest

/// The pool's bookkeeping as a value: workers started up to the limit, FIFO beyond, withdrawn jobs
/// never handed out, a bounded queue, and parked workers woken before new ones are started.
final class BlockingPoolStateTests: XCTestCase {
    private typealias State = BlockingPoolState<String>

    func testWorkersStartUpToTheLimitThenJobsQueue() {
        var state = State(threadLimit: 2, queueLimit: 10)
        XCTAssertEqual(state.submit("a"), .queuedStartingWorker(ticket: 0))
        XCTAssertEqual(state.submit("b"), .queuedStartingWorker(ticket: 1))
        XCTAssertEqual(state.submit("c"), .queued(ticket: 2))
        XCTAssertEqual(state.submit("d"), .queued(ticket: 3))
        XCTAssertEqual(state.threads, 2)
        XCTAssertEqual(state.queuedCount, 4)
        // Whichever worker asks, jobs come out oldest first.
        XCTAssertEqual(["a", "b", "c", "d"], (0..<4).map { _ in run(state.next()) })
        XCTAssertEqual(state.queuedCount, 0)
    }

    func testWithdrawnJobsAreNeverHandedOut() {
        var state = State(threadLimit: 1, queueLimit: 10)
        var tickets: [String: UInt64] = [:]
        for job in ["a", "b", "c", "d", "e"] { tickets[job] = ticket(state.submit(job)) }
        XCTAssertEqual(state.withdraw(tickets["b"]!), "b")
        XCTAssertEqual(state.withdraw(tickets["d"]!), "d")
        XCTAssertEqual(state.withdraw(tickets["d"]!), nil, "a job is withdrawn once")
        XCTAssertEqual(state.queuedCount, 3)
        XCTAssertEqual(run(state.next()), "a")
        XCTAssertEqual(state.withdraw(tickets["a"]!), nil, "a job a worker took cannot be withdrawn")
        XCTAssertEqual(run(state.next()), "c")
        XCTAssertEqual(run(state.next()), "e")
        XCTAssertTrue(isPark(state.next()))
    }

    func testWithdrawingEveryJobLeavesAnEmptyQueue() {
        var state = State(threadLimit: 1, queueLimit: 1_000)
        let tickets = (0..<1_000).compactMap { ticket(state.submit("job \($0)")) }
        XCTAssertEqual(tickets.count, 1_000)
        for ticket in tickets { XCTAssertNotNil(state.withdraw(ticket)) }
        XCTAssertEqual(state.queuedCount, 0)
        XCTAssertTrue(isPark(state.next()))
        XCTAssertEqual(state.submit("late"), .queuedWakingWorker(ticket: 1_000))
        XCTAssertEqual(run(state.next()), "late")
    }

    func testAFullQueueRejects() {
        var state = State(threadLimit: 1, queueLimit: 2)
        XCTAssertEqual(state.submit("running"), .queuedStartingWorker(ticket: 0))
        XCTAssertEqual(run(state.next()), "running")
        XCTAssertEqual(state.submit("a"), .queued(ticket: 1))
        XCTAssertEqual(state.submit("b"), .queued(ticket: 2))
        XCTAssertEqual(state.submit("c"), .rejected)
        XCTAssertEqual(state.queuedCount, 2)
        // Room again once a job leaves, by a worker or by its caller.
        XCTAssertNotNil(state.withdraw(1))
        XCTAssertEqual(state.submit("c"), .queued(ticket: 3))
        XCTAssertEqual(run(state.next()), "b")
        XCTAssertEqual(state.submit("d"), .queued(ticket: 4))
    }

    func testAQueueOfZeroStillUsesEveryWorker() {
        var state = State(threadLimit: 2, queueLimit: 0)
        XCTAssertEqual(state.submit("a"), .queuedStartingWorker(ticket: 0))
        XCTAssertEqual(state.submit("b"), .queuedStartingWorker(ticket: 1))
        XCTAssertEqual(state.submit("c"), .rejected)
        XCTAssertEqual(run(state.next()), "a")
        XCTAssertEqual(run(state.next()), "b")
        XCTAssertTrue(isPark(state.next()))
        XCTAssertEqual(state.submit("d"), .queuedWakingWorker(ticket: 2), "a parked worker takes it")
    }

    func testParkedWorkersAreWokenBeforeNewOnesStart() {
        var state = State(threadLimit: 3, queueLimit: 10)
        XCTAssertEqual(state.submit("a"), .queuedStartingWorker(ticket: 0))
        XCTAssertEqual(run(state.next()), "a")
        XCTAssertTrue(isPark(state.next()))
        XCTAssertEqual(state.parked, 1)
        XCTAssertEqual(state.submit("b"), .queuedWakingWorker(ticket: 1))
        XCTAssertEqual(state.parked, 0, "the wake-up is on its way; the next job needs another worker")
        XCTAssertEqual(state.submit("c"), .queuedStartingWorker(ticket: 2))
        XCTAssertEqual(state.threads, 2)
    }

    /// Wake-ups are counts: a worker woken for a job that another worker took, or that was
    /// withdrawn, finds the queue empty and parks again; none is lost, none waits with work queued.
    func testAWakeUpForAJobThatIsGoneParksAgain() {
        var state = State(threadLimit: 2, queueLimit: 10)
        XCTAssertEqual(state.submit("a"), .queuedStartingWorker(ticket: 0))  // worker 1
        XCTAssertEqual(run(state.next()), "a")  // worker 1
        XCTAssertTrue(isPark(state.next()))  // worker 1 parks
        XCTAssertEqual(state.submit("b"), .queuedWakingWorker(ticket: 1))  // wakes worker 1
        XCTAssertEqual(state.submit("c"), .queuedStartingWorker(ticket: 2))  // worker 2
        XCTAssertEqual(run(state.next()), "b")  // worker 2 takes b, before worker 1 wakes
        XCTAssertEqual(run(state.next()), "c")  // and c
        XCTAssertTrue(isPark(state.next()))  // worker 2 parks
        XCTAssertTrue(isPark(state.next()))  // worker 1 wakes to nothing and parks again
        XCTAssertEqual(state.parked, 2)
        XCTAssertEqual(state.submit("d"), .queuedWakingWorker(ticket: 3))
        XCTAssertEqual(state.withdraw(3), "d")
        XCTAssertTrue(isPark(state.next()), "woken for a withdrawn job")
        XCTAssertEqual(state.parked, 2)
    }

    private func run(_ next: State.Next, file: StaticString = #filePath, line: UInt = #line) -> String? {
        guard case .run(let job) = next else {
            XCTFail("expected a job, got \(next)", file: file, line: line)
            return nil
        }
        return job
    }

    private func isPark(_ next: State.Next) -> Bool {
        if case .park = next { return true }
        return false
    }

    private func ticket(_ submission: State.Submission) -> UInt64? {
        switch submission {
        case .queuedStartingWorker(let ticket), .queuedWakingWorker(let ticket), .queued(let ticket): return ticket
        case .rejected: return nil
        }
    }
}
