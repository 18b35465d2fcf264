import Foundation
import HTTPDNSCore

/// The resource timeouts (`timeoutIntervalForResource`) of every running load, on one timer.
///
/// A timer source per load woke libdispatch's manager thread to arm it and again to cancel it, two
/// thread hops per request (about 25 µs of CPU each request under row 4a of the bench). Here a load
/// adds an entry and removes it under a lock, and the one timer is moved only when a deadline comes
/// in earlier than the one it waits for, which the default (7 days) never does. When it fires, the
/// expired entries are called and it waits for the earliest left; entries are only those of loads
/// still running, so nothing is held for the 7 days.
final class ResourceDeadlines: @unchecked Sendable {  // the timer is only rescheduled under `state`
    /// The process's deadlines, on a queue of their own.
    static let shared = ResourceDeadlines()

    /// One entry, for ``cancel(_:)``.
    struct Token: Hashable, Sendable {
        fileprivate let id: UInt64
    }

    private struct Entry {
        var deadline: DispatchTime
        var expire: @Sendable () -> Void
    }

    private struct State {
        var entries: [UInt64: Entry] = [:]
        var lastID: UInt64 = 0
        /// When the timer fires next (possibly for an entry cancelled since); nil when it waits for nothing.
        var armed: DispatchTime?
    }

    private let state = HTTPDNSLock(State())
    private let timer: any DispatchSourceTimer

    init(queue: DispatchQueue = DispatchQueue(label: "swift-httpdns.url-protocol.resource-timeouts")) {
        timer = DispatchSource.makeTimerSource(queue: queue)
        timer.setEventHandler { [weak self] in self?.expireDue() }
        timer.activate()
    }

    deinit {
        timer.cancel()
    }

    /// Calls `expire` (on the timer's queue) once `interval` has passed, unless ``cancel(_:)`` comes first.
    func add(after interval: TimeInterval, expire: @escaping @Sendable () -> Void) -> Token {
        let deadline = DispatchTime.now() + interval
        return state.withLock { state in
            state.lastID += 1
            state.entries[state.lastID] = Entry(deadline: deadline, expire: expire)
            if state.armed.map({ deadline < $0 }) ?? true {
                state.armed = deadline
                timer.schedule(deadline: deadline)
            }
            return Token(id: state.lastID)
        }
    }

    /// Drops the entry; its `expire` is not called (unless it already was).
    func cancel(_ token: Token) {
        state.withLock { _ = $0.entries.removeValue(forKey: token.id) }
    }

    /// The entries running, for tests.
    var count: Int { state.withLock { $0.entries.count } }

    private func expireDue() {
        let now = DispatchTime.now()
        let due = state.withLock { state -> [Entry] in
            let ids = state.entries.filter { $0.value.deadline <= now }.map(\.key)
            let due = ids.compactMap { state.entries.removeValue(forKey: $0) }
            state.armed = state.entries.values.map(\.deadline).min()
            if let next = state.armed { timer.schedule(deadline: next) }
            return due
        }
        for entry in due { entry.expire() }
    }
}
