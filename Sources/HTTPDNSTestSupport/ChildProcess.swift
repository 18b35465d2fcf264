#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation

/// A server process started by a test: runs in the foreground as our child, and is stopped with
/// SIGTERM, then SIGKILL when it does not exit in time, so that a stuck server never hangs the suite.
final class ChildProcess: @unchecked Sendable {
    // `Process` is not Sendable; every access goes through the lock.
    private let lock = NSLock()
    private var process: Process?
    private let stopTimeout: Duration

    /// Starts `executable` with stdin from /dev/null and stdout and stderr appended to `output`.
    init(executable: String, arguments: [String], output: URL, stopTimeout: Duration = .seconds(10)) throws {
        if !FileManager.default.fileExists(atPath: output.path) {
            _ = FileManager.default.createFile(atPath: output.path, contents: nil)
        }
        let log = try FileHandle(forWritingTo: output)
        defer { try? log.close() }
        try log.seekToEnd()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = log
        process.standardError = log
        // The child inherits this thread's signal mask, and libdispatch worker threads (where async
        // tests run) block SIGTERM: spawn with nothing blocked so that stop() works.
        var empty = sigset_t()
        var saved = sigset_t()
        sigemptyset(&empty)
        pthread_sigmask(SIG_SETMASK, &empty, &saved)
        defer { pthread_sigmask(SIG_SETMASK, &saved, nil) }
        try process.run()
        self.process = process
        self.stopTimeout = stopTimeout
    }

    deinit {
        _ = stop(timeout: nil)
    }

    /// Whether the process has not exited yet.
    var isRunning: Bool {
        lock.withLock { process?.isRunning ?? false }
    }

    /// Sends SIGTERM and waits; after `timeout` (default: the one given at start) sends SIGKILL.
    ///
    /// - Returns: false when the process was already stopped by an earlier call.
    @discardableResult
    func stop(timeout: Duration?) -> Bool {
        guard let process = lock.withLock({ () -> Process? in
            defer { self.process = nil }
            return self.process
        }) else { return false }
        guard process.isRunning else { return true }
        process.terminate()
        let deadline = ContinuousClock.now + (timeout ?? stopTimeout)
        while process.isRunning, ContinuousClock.now < deadline {
            usleep(10_000)
        }
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
        }
        process.waitUntilExit()
        return true
    }
}
