#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Foundation

/// A server process started by a test: runs in the foreground as our child, and is stopped with
/// SIGTERM, then SIGKILL when it does not exit in time, so that a stuck server never hangs the suite.
/// Started through ``Spawn`` (posix_spawn), not Foundation's `Process`.
final class ChildProcess: @unchecked Sendable {
    // The pid and the reaped status are only touched under the lock.
    private let lock = NSLock()
    private let pid: pid_t
    private var reaped = false
    private var stopped = false
    private let stopTimeout: Duration

    /// Starts `executable` with stdin from /dev/null and stdout and stderr appended to `output`.
    init(executable: String, arguments: [String], output: URL, stopTimeout: Duration = .seconds(10)) throws {
        pid = try Spawn.start(executable, arguments, stdout: output.path, stderr: output.path, append: true)
        self.stopTimeout = stopTimeout
    }

    deinit {
        _ = stop(timeout: nil)
    }

    /// Whether the process has not exited yet.
    var isRunning: Bool {
        lock.withLock { !reapIfExited() }
    }

    /// Reaps the child if it has exited; true once it is gone. Under the lock.
    private func reapIfExited() -> Bool {
        if reaped { return true }
        var status: Int32 = 0
        let result = waitpid(pid, &status, WNOHANG)
        if result == pid || (result < 0 && errno == ECHILD) { reaped = true }
        return reaped
    }

    /// Sends `signal` (SIGHUP: reload) unless the process has exited.
    func send(_ signal: Int32) {
        lock.withLock {
            if !reapIfExited() { kill(pid, signal) }
        }
    }

    /// Sends SIGTERM and waits; after `timeout` (default: the one given at start) sends SIGKILL.
    ///
    /// - Returns: false when the process was already stopped by an earlier call.
    @discardableResult
    func stop(timeout: Duration?) -> Bool {
        let first = lock.withLock { () -> Bool in
            defer { stopped = true }
            return !stopped
        }
        guard first else { return false }
        guard isRunning else { return true }
        kill(pid, SIGTERM)
        let deadline = ContinuousClock.now + (timeout ?? stopTimeout)
        while isRunning, ContinuousClock.now < deadline {
            usleep(10_000)
        }
        if isRunning {
            kill(pid, SIGKILL)
            lock.withLock {
                var status: Int32 = 0
                if !reaped, waitpid(pid, &status, 0) == pid { reaped = true }
            }
        }
        return true
    }
}
