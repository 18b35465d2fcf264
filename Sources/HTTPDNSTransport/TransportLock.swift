import Foundation

/// A value behind a pthread mutex (`NSLock`).
///
/// Used for state shared between callers and the loop thread instead of `Synchronization.Mutex`:
/// on Linux that one waits with raw futex calls inside the uninstrumented standard library, so
/// `swift test --sanitize=thread` cannot see its ordering and reports false races, while it
/// intercepts pthread mutexes.
final class TransportLock<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    init(_ value: Value) {
        self.value = value
    }

    func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
