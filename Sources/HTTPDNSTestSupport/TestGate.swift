import Dispatch
import Foundation

/// A one-way barrier: callers of ``wait(timeout:)`` stay there until the test calls ``open()``.
///
/// Tests hold an event in place with it (an upstream answer, a handler, a resolver's lookup) for
/// as long as they need to look at the state around it, instead of hoping a sleep is long enough.
/// The timeout bounds only a broken test: a gate never opened lets its waiters go after it.
package final class TestGate: @unchecked Sendable {
    private let condition = NSCondition()
    private var isOpen = false
    private var waiting = 0
    private var arrived = 0
    private var suspended: [Int: CheckedContinuation<Void, Never>] = [:]
    private var nextID = 0

    package init() {}

    /// Blocks the calling thread until the gate is open, or `timeout` passes (default 60 s); true
    /// when it was opened. For threads of their own (a loopback server's handler).
    @discardableResult
    package func wait(timeout: Duration = .seconds(60)) -> Bool {
        let deadline = Date(timeIntervalSinceNow: Self.seconds(timeout))
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

    /// Suspends the calling task until the gate is open, or `timeout` passes (default 60 s); true
    /// when it was opened. Holds no thread of the cooperative pool meanwhile.
    @discardableResult
    package func wait(timeout: Duration = .seconds(60)) async -> Bool {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            condition.lock()
            arrived += 1
            guard !isOpen else {
                condition.unlock()
                continuation.resume()
                return
            }
            let id = nextID
            nextID += 1
            waiting += 1
            suspended[id] = continuation
            condition.unlock()
            DispatchQueue.global().asyncAfter(deadline: .now() + Self.seconds(timeout)) { [self] in
                condition.lock()
                let expired = suspended.removeValue(forKey: id)
                if expired != nil { waiting -= 1 }
                condition.unlock()
                expired?.resume()
            }
        }
        return isOpened
    }

    /// Lets every waiter go, and every later caller through at once.
    package func open() {
        condition.lock()
        isOpen = true
        let released = Array(suspended.values)
        waiting -= released.count
        suspended = [:]
        condition.broadcast()
        condition.unlock()
        for continuation in released { continuation.resume() }
    }

    /// Whether ``open()`` was called.
    package var isOpened: Bool {
        condition.lock()
        defer { condition.unlock() }
        return isOpen
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

    private static func seconds(_ duration: Duration) -> Double {
        let (seconds, attoseconds) = duration.components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
