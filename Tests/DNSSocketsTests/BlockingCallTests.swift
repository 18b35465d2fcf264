@testable import DNSSockets
import Dispatch
import HTTPDNSCore
import XCTest

/// Blocking calls on real pool threads: a queued job whose caller left never runs and leaves the
/// queue at once, a full queue refuses, a running job sees its caller leave, and every caller gets
/// exactly one outcome while results, timers and cancellations race.
///
/// Each test has a pool of its own, small enough to fill; nothing here waits on a clock to order
/// events: the worker is held by a job that blocks until the test releases it.
final class BlockingCallTests: XCTestCase {
    func testAQueuedJobWhoseCallerTimesOutNeverRuns() async throws {
        for limit in [BlockingCall<Int>.Limit.call(.milliseconds(20)), .queue(.milliseconds(20))] {
            let pool = BlockingPool(name: "test pool", threadLimit: 1, queueLimit: 4)
            let holder = await Holder(occupying: pool)
            let ran = HTTPDNSLock(false)
            await assertCode(.timedOut, "\(limit)") {
                _ = try await BlockingCall<Int>.run(on: pool, limit: limit) { _ in
                    ran.withLock { $0 = true }
                    return .success(1)
                }
            }
            XCTAssertEqual(pool.queuedCount, 0, "the job left the queue with its caller (\(limit))")
            try await holder.release()
            try await assertWorkerIsPastEarlierJobs(pool)
            XCTAssertFalse(ran.withLock { $0 }, "\(limit)")
        }
    }

    func testAQueuedJobWhoseCallerIsCancelledNeverRuns() async throws {
        let pool = BlockingPool(name: "test pool", threadLimit: 1, queueLimit: 4)
        let holder = await Holder(occupying: pool)
        let ran = HTTPDNSLock(false)
        let task = Task {
            try await BlockingCall<Int>.run(on: pool, limit: .call(.seconds(600))) { _ in
                ran.withLock { $0 = true }
                return .success(1)
            }
        }
        await waitUntilQueued(1, on: pool)
        task.cancel()
        await assertCode(.cancelled) { _ = try await task.value }
        XCTAssertEqual(pool.queuedCount, 0, "the job left the queue with its caller")
        try await holder.release()
        try await assertWorkerIsPastEarlierJobs(pool)
        XCTAssertFalse(ran.withLock { $0 })
    }

    func testAFullQueueRefusesAtOnceAndTheQueuedJobStillRuns() async throws {
        let pool = BlockingPool(name: "test pool", threadLimit: 1, queueLimit: 1)
        let holder = await Holder(occupying: pool)
        let queued = Task { try await BlockingCall<Int>.run(on: pool, limit: .call(.seconds(600))) { _ in .success(1) } }
        await waitUntilQueued(1, on: pool)
        let ran = HTTPDNSLock(false)
        await assertCode(.transport) {
            _ = try await BlockingCall<Int>.run(on: pool, limit: .call(.seconds(600))) { _ in
                ran.withLock { $0 = true }
                return .success(2)
            }
        }
        try await holder.release()
        let value = try await queued.value
        XCTAssertEqual(value, 1)
        try await assertWorkerIsPastEarlierJobs(pool)
        XCTAssertFalse(ran.withLock { $0 })
    }

    /// `isFinished` is how a running job learns that its caller has gone (timeout or cancellation).
    func testARunningJobSeesItsCallerLeave() async throws {
        let pool = BlockingPool(name: "test pool", threadLimit: 1, queueLimit: 4)
        let (stopped, stop) = AsyncStream.makeStream(of: Void.self)
        await assertCode(.timedOut) {
            _ = try await BlockingCall<Int>.run(on: pool, limit: .call(.milliseconds(20))) { call in
                // The job can only leave this loop once its caller has had the timeout.
                while !call.isFinished { usleep(1_000) }
                stop.yield()
                return .success(1)
            }
        }
        var iterator = stopped.makeAsyncIterator()
        await iterator.next()
    }

    /// Results, timers (both kinds, some already due) and cancellations race over 2,000 calls on two
    /// workers. Each caller gets one outcome, its own: a second resume of a caller's continuation
    /// would stop the process (`CheckedContinuation`), a lost one would leave the group waiting.
    func testEveryCallerGetsExactlyOneOutcomeUnderRaces() async {
        let pool = BlockingPool(name: "test pool", threadLimit: 2, queueLimit: 10_000)
        let runs = HTTPDNSLock(0)
        let calls = 2_000
        let outcomes = await withTaskGroup(of: (Int, Result<Int, HTTPDNSError>).self) { group in
            for index in 0..<calls {
                let delay = Duration.microseconds(index % 5 * 200)
                let limit: BlockingCall<Int>.Limit = index % 2 == 0 ? .call(delay) : .queue(delay)
                group.addTask {
                    let call = Task {
                        try await BlockingCall<Int>.run(on: pool, limit: limit) { _ in
                            runs.withLock { $0 += 1 }
                            return .success(index)
                        }
                    }
                    if index % 3 == 0 { call.cancel() }
                    do {
                        return (index, .success(try await call.value))
                    } catch let error as HTTPDNSError {
                        return (index, .failure(error))
                    } catch {
                        return (index, .failure(HTTPDNSError(.transport, "unexpected \(error)")))
                    }
                }
            }
            var outcomes: [(Int, Result<Int, HTTPDNSError>)] = []
            for await outcome in group { outcomes.append(outcome) }
            return outcomes
        }
        XCTAssertEqual(outcomes.map(\.0).sorted(), Array(0..<calls))
        var successes = 0
        for (index, outcome) in outcomes {
            switch outcome {
            case .success(let value):
                successes += 1
                XCTAssertEqual(value, index, "a caller got another call's result")
            case .failure(let error):
                XCTAssertTrue([.timedOut, .cancelled].contains(error.code), "\(index): \(error)")
            }
        }
        // A result comes only from a job that ran (each job counts itself before returning).
        XCTAssertLessThanOrEqual(successes, runs.withLock { $0 })
    }

    // MARK: - Helpers

    /// Holds every worker of a one-thread pool with a job that blocks until released.
    private struct Holder {
        private let gate: DispatchSemaphore
        private let task: Task<Int, any Error>

        /// Returns once the job runs, so that the worker is known to be taken.
        init(occupying pool: BlockingPool) async {
            let (started, start) = AsyncStream.makeStream(of: Void.self)
            let gate = DispatchSemaphore(value: 0)
            self.gate = gate
            task = Task {
                try await BlockingCall<Int>.run(on: pool, limit: .call(.seconds(600))) { _ in
                    start.yield()
                    // Bounded only so that a failed test cannot park the worker forever.
                    _ = gate.wait(timeout: .now() + 600)
                    return .success(0)
                }
            }
            var iterator = started.makeAsyncIterator()
            await iterator.next()
        }

        func release() async throws {
            gate.signal()
            _ = try await task.value
        }
    }

    /// Runs one more job on `pool` and waits for it. Its workers take jobs oldest first, so once it
    /// has run, every job queued before it has run or been skipped.
    private func assertWorkerIsPastEarlierJobs(_ pool: BlockingPool, file: StaticString = #filePath, line: UInt = #line) async throws {
        let value = try await BlockingCall<Int>.run(on: pool, limit: .call(.seconds(600))) { _ in .success(42) }
        XCTAssertEqual(value, 42, file: file, line: line)
    }

    /// Waits (yielding, not sleeping) until `count` jobs wait in `pool`'s queue.
    private func waitUntilQueued(_ count: Int, on pool: BlockingPool) async {
        while pool.queuedCount < count { await Task.yield() }
    }

    private func assertCode(
        _ code: HTTPDNSError.Code, _ message: String = "", file: StaticString = #filePath, line: UInt = #line,
        _ body: () async throws -> Void
    ) async {
        do {
            try await body()
            XCTFail("expected \(code) \(message)", file: file, line: line)
        } catch let error as HTTPDNSError {
            XCTAssertEqual(error.code, code, "\(error) \(message)", file: file, line: line)
        } catch {
            XCTFail("unexpected \(error) \(message)", file: file, line: line)
        }
    }
}
