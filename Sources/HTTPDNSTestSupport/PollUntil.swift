import Foundation

/// Polls `condition` until it holds or `timeout` passes.
///
/// A barrier on state that another thread or process changes (a counter, a file, a child's output):
/// a fixed sleep only guesses how long that takes, and on a loaded two-core machine the guess is
/// sometimes wrong in both directions (too short: a flake; too long: a test that waits for nothing).
///
/// - Parameters:
///   - timeout: how long the condition may take; generous, since it bounds only the failing case.
///     Default 10 s.
///   - interval: the pause between checks. Default 5 ms.
/// - Returns: whether the condition held before the deadline; the caller asserts, naming what it waited for.
package func pollUntil(
    within timeout: Duration = .seconds(10), every interval: Duration = .milliseconds(5),
    _ condition: () async throws -> Bool
) async rethrows -> Bool {
    let deadline = ContinuousClock.now.advanced(by: timeout)
    while true {
        if try await condition() { return true }
        if ContinuousClock.now >= deadline { return false }
        try? await Task.sleep(for: interval)
    }
}

/// ``pollUntil(within:every:_:)`` for synchronous tests: blocks the calling thread between checks.
package func pollUntilBlocking(
    within timeout: Duration = .seconds(10), every interval: Duration = .milliseconds(5),
    _ condition: () throws -> Bool
) rethrows -> Bool {
    let deadline = ContinuousClock.now.advanced(by: timeout)
    let pause = useconds_t(max(1, interval.components.seconds * 1_000_000 + interval.components.attoseconds / 1_000_000_000_000))
    while true {
        if try condition() { return true }
        if ContinuousClock.now >= deadline { return false }
        usleep(pause)
    }
}
