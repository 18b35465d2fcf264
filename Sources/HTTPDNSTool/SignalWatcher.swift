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
/// `DispatchSource` signal sources, used before, set the signal to SIG_IGN and register a signalfd
/// later, on libdispatch's manager thread: a signal in between was discarded, or (while a thread
/// that does not block it runs) took its default action. `httpdns serve` signalled right after
/// printing `listening on` died of SIGHUP or never saw it (1 in 20 runs on a loaded machine; issue
/// 25's SIGHUP tests). A handler is in place when `sigaction` returns, whichever thread the kernel
/// picks, and it leaves a signal pending on a blocked thread where it is.
final class SignalWatcher: Sendable {
    private let signals: [Int32]
    private let writeEnd: Int32

    /// Starts watching `signals`; their default actions (ending the process) are replaced while
    /// watched. One watcher at a time.
    init(_ signals: [Int32] = [SIGINT, SIGTERM], handler: @escaping @Sendable (Int32) -> Void) {
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else { fatalError("httpdns: cannot make the signal pipe: \(String(cString: strerror(errno)))") }
        for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        // The handler must never block: a full pipe (64 KiB of unread signals) drops the signal.
        _ = fcntl(ends[1], F_SETFL, fcntl(ends[1], F_GETFL) | O_NONBLOCK)
        self.signals = signals
        writeEnd = ends[1]
        signalPipe.store(ends[1], ordering: .releasing)
        let readEnd = ends[0]
        let thread = Thread {
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
        thread.name = "httpdns signals"
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
