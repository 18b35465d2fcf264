#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import Synchronization

/// Runs a handler when one of the watched signals (SIGINT and SIGTERM by default) arrives, on a
/// thread of its own, so that the handler may do ordinary work (cancel a task, stop a server,
/// reload files) instead of being limited to async-signal-safe calls.
///
/// A C handler writes the signal's number to a pipe that the thread reads (the self-pipe trick).
/// It is in place when `signal` returns. The `DispatchSource` signal sources used before were not:
/// the watcher set SIG_IGN at once (which also discards a signal already pending) and libdispatch
/// registered each source later, on its own queue, so a signal in between was lost; and serve
/// started them only after printing `listening on`, so a signal sent as soon as that line
/// appeared ended serve (SIGHUP's default action) or was lost: 4 of 100 runs with a busy CPU,
/// met by issue 25's SIGHUP tests under CI load. The handler runs on whichever thread the kernel
/// picks; in this process that is libdispatch's main thread parked in `sigsuspend` (every worker
/// and loop thread blocks these signals), so no other system call sees EINTR.
final class SignalWatcher: Sendable {
    private let signals: [Int32]
    private let writeEnd: Int32

    /// Starts watching `signals`; their default actions (ending the process) are replaced while
    /// watched. One watcher at a time.
    /// - Throws: ``ToolFailure`` when the pipe cannot be made (no descriptor left).
    init(_ signals: [Int32] = [SIGINT, SIGTERM], handler: @escaping @Sendable (Int32) -> Void) throws {
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else { throw ToolFailure("cannot watch signals: pipe: \(String(cString: strerror(errno)))") }
        for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        // The handler must never block: a full pipe (64 KiB of unread signals) drops the signal.
        _ = fcntl(ends[1], F_SETFL, fcntl(ends[1], F_GETFL) | O_NONBLOCK)
        self.signals = signals
        writeEnd = ends[1]
        signalPipe.store(ends[1], ordering: .releasing)
        let readEnd = ends[0]
        let thread = Thread {
            Thread.current.name = "httpdns signals"
            var number: UInt8 = 0
            while true {
                let count = read(readEnd, &number, 1)
                if count == 1 {
                    guard number != 0 else { break }  // stop()
                    handler(Int32(number))
                } else if count == 0 || errno != EINTR {
                    break
                }
            }
            close(readEnd)
        }
        thread.start()
        for number in signals { signal(number, forwardSignal) }
    }

    /// Stops watching and restores the default actions. The pipe's write end stays open: a handler
    /// that read it just before may still write, and must not write into a descriptor reused since.
    func stop() {
        for number in signals { signal(number, SIG_DFL) }
        signalPipe.store(-1, ordering: .releasing)
        var end: UInt8 = 0
        _ = write(writeEnd, &end, 1)  // the thread reads it and finishes
    }
}

/// The write end of the watcher's pipe, -1 when none watches.
private let signalPipe = Atomic<Int32>(-1)

/// The C handler: async-signal-safe (an atomic load and `write`), and `errno` is kept for the code
/// it interrupted.
private func forwardSignal(_ number: Int32) {
    let saved = errno
    var byte = UInt8(truncatingIfNeeded: number)
    let pipe = signalPipe.load(ordering: .acquiring)
    if pipe >= 0 { _ = write(pipe, &byte, 1) }
    errno = saved
}
