import Foundation

/// A one-way barrier: threads that reach ``wait(timeout:)`` stay there until the test calls ``open()``.
///
/// Tests hold an event in place with it (an upstream answer, a handler, a stream's next chunk) for
/// as long as they need to look at the state around it, instead of hoping a sleep is long enough.
/// The timeout bounds only a broken test: a gate never opened lets its waiters go after it.
package final class TestGate: @unchecked Sendable {
    private let condition = NSCondition()
    private var isOpen = false
    private var waiting = 0
    private var arrived = 0

    package init() {}

    /// Blocks until the gate is open, or `timeout` passes (default 60 s); true when it was opened.
    @discardableResult
    package func wait(timeout: Duration = .seconds(60)) -> Bool {
        let (seconds, attoseconds) = timeout.components
        let deadline = Date(timeIntervalSinceNow: Double(seconds) + Double(attoseconds) / 1e18)
        condition.lock()
        defer { condition.unlock() }
        arrived += 1
        waiting += 1
        defer { waiting -= 1 }
        while !isOpen {
            if !condition.wait(until: deadline) { return isOpen }
        }
        return true
    }

    /// Lets every waiter go, and every later caller through at once.
    package func open() {
        condition.lock()
        isOpen = true
        condition.broadcast()
        condition.unlock()
    }

    /// Callers held at the gate right now.
    package var waitingCount: Int {
        condition.lock()
        defer { condition.unlock() }
        return waiting
    }

    /// Callers that have reached the gate so far (held or let through).
    package var arrivedCount: Int {
        condition.lock()
        defer { condition.unlock() }
        return arrived
    }
}
