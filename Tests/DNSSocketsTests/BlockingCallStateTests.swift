@testable import DNSSockets
import XCTest

/// One blocking call's rules, in every order its events can arrive: the caller parking its waiter,
/// the pool's ticket coming back, a worker starting the job, the job's result, the timer and
/// cancellation. Exactly one outcome reaches the waiter, the first that counts; a job whose caller
/// had an outcome before a worker took it never runs; such a job is withdrawn from the queue once.
final class BlockingCallStateTests: XCTestCase {
    private enum Event: CaseIterable {
        case wait, queued, start, result, timeout, cancel
    }

    private enum TimerMode {
        /// `BlockingCall.Limit.call`: the timer ends the call, running or not.
        case call
        /// `BlockingCall.Limit.queue`: the timer only ends a call whose job has not started.
        case queue
    }

    private let ticket: UInt64 = 7

    func testEveryOrderWithATimerOnTheWholeCall() {
        XCTAssertEqual(checkEveryOrder(.call), 360)
    }

    func testEveryOrderWithATimerOnTheQueueOnly() {
        XCTAssertEqual(checkEveryOrder(.queue), 360)
    }

    func testAnOutcomeBeforeTheWaiterIsKeptForIt() {
        var state = BlockingCallState<String, String>()
        let actions = state.finish("cancelled")
        XCTAssertNil(actions.delivery)
        XCTAssertTrue(state.isFinished)
        XCTAssertFalse(state.start(), "a job whose caller left before it started never runs")
        let delivery = state.wait("waiter")
        XCTAssertEqual(delivery?.waiter, "waiter")
        XCTAssertEqual(delivery?.outcome, "cancelled")
    }

    /// Runs every order of the six events in which the job's result comes after its start, and
    /// checks each; returns how many orders ran.
    private func checkEveryOrder(_ mode: TimerMode) -> Int {
        var orders = 0
        for order in permutations(Event.allCases) where order.firstIndex(of: .start)! < order.firstIndex(of: .result)! {
            orders += 1
            check(order, mode)
        }
        return orders
    }

    private func check(_ order: [Event], _ mode: TimerMode) {
        var state = BlockingCallState<String, String>()
        var deliveries: [(waiter: String, outcome: String)] = []
        var withdrawals: [UInt64] = []
        var ran = false
        // What the rules say should happen, worked out independently as the events go by.
        var expectedOutcome: String?
        var started = false

        func apply(_ actions: BlockingCallState<String, String>.Actions) {
            if let ticket = actions.withdraw { withdrawals.append(ticket) }
            if let delivery = actions.delivery { deliveries.append((delivery.waiter, delivery.outcome)) }
        }
        for event in order {
            switch event {
            case .wait:
                if let delivery = state.wait("waiter") { deliveries.append((delivery.waiter, delivery.outcome)) }
            case .queued:
                if state.queued(ticket: ticket) { withdrawals.append(ticket) }
            case .start:
                ran = state.start()
                started = expectedOutcome == nil
                XCTAssertEqual(ran, started, "\(order) \(mode)")
            case .result:
                guard ran else { continue }  // a job that never started has no result
                if expectedOutcome == nil { expectedOutcome = "result" }
                apply(state.finish("result"))
            case .timeout:
                switch mode {
                case .call:
                    if expectedOutcome == nil { expectedOutcome = "timeout" }
                    apply(state.finish("timeout"))
                case .queue:
                    if expectedOutcome == nil && !started { expectedOutcome = "timeout" }
                    apply(state.expire("timeout"))
                }
            case .cancel:
                if expectedOutcome == nil { expectedOutcome = "cancel" }
                apply(state.finish("cancel"))
            }
            XCTAssertEqual(state.isFinished, expectedOutcome != nil, "isFinished after \(event) in \(order) \(mode)")
        }
        XCTAssertEqual(deliveries.count, 1, "\(order) \(mode)")
        XCTAssertEqual(deliveries.first?.waiter, "waiter", "\(order) \(mode)")
        XCTAssertEqual(deliveries.first?.outcome, expectedOutcome, "\(order) \(mode)")
        // A job that did not run is taken out of the queue exactly once; one that ran never is.
        XCTAssertEqual(withdrawals, ran ? [] : [ticket], "\(order) \(mode)")
    }

    private func permutations<T>(_ items: [T]) -> [[T]] {
        guard items.count > 1 else { return [items] }
        var result: [[T]] = []
        for index in items.indices {
            var rest = items
            let first = rest.remove(at: index)
            for tail in permutations(rest) { result.append([first] + tail) }
        }
        return result
    }
}
