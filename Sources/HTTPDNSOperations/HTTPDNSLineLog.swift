#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Dispatch
import Foundation
import HTTPDNSCore

/// A log of one line per event (the service's access log, the stub's query log), written to a
/// file descriptor by a thread of its own so that a slow disk or pipe never stalls the event loop.
///
/// Logging encodes the line into a buffer under a lock and returns; the writer thread takes the
/// whole buffer at once and `write(2)`s it. The buffer is bounded (`maxBufferedBytes`): when the
/// writer lags that far behind, new lines are dropped and counted (``dropped``, and the caller's
/// `onDrop`, which feeds a metric) rather than queued without end. A failed write
/// (disk full, closed pipe) drops that batch and counts its lines the same way. Lines are never
/// torn: each batch is whole lines, and a short write is continued.
///
/// Call ``close(timeout:)`` before exit: it writes what is buffered and stops the thread. A log opened by
/// path can be ``reopen()``ed after logrotate moved the file (on SIGHUP, say).
package final class HTTPDNSLineLog: Sendable {
    /// A path that cannot be opened for appending: the `errno` text.
    package struct OpenFailure: Error, Sendable, Hashable, CustomStringConvertible {
        package var path: String
        package var reason: String
        package var description: String { "cannot open \(path): \(reason)" }
    }

    private struct State {
        var pending: [UInt8] = []
        var pendingLines = 0
        var writerIdle = false
        var closing = false
        var finished = false
        var written: UInt64 = 0
        var dropped: UInt64 = 0
        /// Where lines go now.
        var descriptor: Int32
        /// Descriptors replaced by ``reopen()``, closed by the writer once no write uses them.
        var retired: [Int32] = []
    }

    private let path: String?
    private let ownsDescriptor: Bool
    /// Most bytes waiting for the writer before lines are dropped, unless told otherwise: 4 MiB
    /// (about 20,000 access-log lines).
    package static let defaultMaxBufferedBytes = 4 << 20

    private let maxBufferedBytes: Int
    private let onDrop: (@Sendable (Int) -> Void)?
    private let state: HTTPDNSLock<State>
    private let wake = DispatchSemaphore(value: 0)
    private let done = DispatchSemaphore(value: 0)

    /// Logs to `fileDescriptor` (stdout, a pipe, a file), which stays open after ``close(timeout:)`` unless
    /// `ownsDescriptor`.
    ///
    /// - Parameters:
    ///   - maxBufferedBytes: most bytes waiting for the writer before lines are dropped.
    ///   - onDrop: told how many lines were dropped each time some are (on the logging thread or
    ///     the writer's), when given.
    package convenience init(
        fileDescriptor: Int32, ownsDescriptor: Bool = false, maxBufferedBytes: Int = defaultMaxBufferedBytes,
        onDrop: (@Sendable (Int) -> Void)? = nil
    ) {
        self.init(fileDescriptor: fileDescriptor, ownsDescriptor: ownsDescriptor, path: nil, maxBufferedBytes: maxBufferedBytes, onDrop: onDrop)
    }

    private init(
        fileDescriptor: Int32, ownsDescriptor: Bool, path: String?, maxBufferedBytes: Int, onDrop: (@Sendable (Int) -> Void)?
    ) {
        self.state = HTTPDNSLock(State(descriptor: fileDescriptor))
        self.path = path
        self.ownsDescriptor = ownsDescriptor
        self.maxBufferedBytes = maxBufferedBytes
        self.onDrop = onDrop
        let thread = Thread { [self] in runWriter() }
        thread.name = "httpdns access log"
        thread.start()
    }

    /// Opens (creating, mode 0640) and appends to the file at `path`; `-` is standard output.
    ///
    /// - Throws: ``OpenFailure`` naming the path and the `errno` text.
    package convenience init(
        path: String, maxBufferedBytes: Int = defaultMaxBufferedBytes, onDrop: (@Sendable (Int) -> Void)? = nil
    ) throws(OpenFailure) {
        if path == "-" {
            self.init(fileDescriptor: STDOUT_FILENO, maxBufferedBytes: maxBufferedBytes, onDrop: onDrop)
            return
        }
        let descriptor = try Self.open(path)
        self.init(fileDescriptor: descriptor, ownsDescriptor: true, path: path, maxBufferedBytes: maxBufferedBytes, onDrop: onDrop)
    }

    private static func open(_ path: String) throws(OpenFailure) -> Int32 {
        let descriptor = openFile(path)
        guard descriptor >= 0 else { throw OpenFailure(path: path, reason: String(cString: strerror(errno))) }
        return descriptor
    }

    /// Opens the log's path again and sends later lines there: after logrotate renamed the file,
    /// the log continues in a new one. Lines already handed to the old file finish there. Does
    /// nothing for a log given as a descriptor (or standard output).
    ///
    /// - Throws: ``OpenFailure`` when the path cannot be opened; the log then goes on in the old file.
    package func reopen() throws(OpenFailure) {
        guard let path, path != "-" else { return }
        let descriptor = try Self.open(path)
        let stale = state.withLock { state -> Int32? in
            guard !state.closing else { return descriptor }
            state.retired.append(state.descriptor)
            state.descriptor = descriptor
            return nil
        }
        if let stale { closeDescriptor(stale) }
    }

    /// Queues the line `append` writes (one JSON object and its newline); never blocks on I/O.
    /// Dropped (and counted) when the buffer is full or the log is closed.
    package func log(appending append: (inout [UInt8]) -> Void) {
        let (accepted, wakeWriter) = state.withLock { state -> (Bool, Bool) in
            guard !state.closing else {
                state.dropped &+= 1
                return (false, false)
            }
            let before = state.pending.count
            append(&state.pending)
            guard state.pending.count <= maxBufferedBytes else {
                state.pending.removeSubrange(before...)
                state.dropped &+= 1
                return (false, false)
            }
            state.pendingLines += 1
            let wakeWriter = state.writerIdle
            state.writerIdle = false
            return (true, wakeWriter)
        }
        if wakeWriter { wake.signal() }
        if !accepted { onDrop?(1) }
    }

    /// Lines written so far.
    package var written: UInt64 { state.withLock { $0.written } }

    /// Lines dropped so far (writer too far behind, write failed, or logged after ``close(timeout:)``).
    package var dropped: UInt64 { state.withLock { $0.dropped } }

    /// Writes what is buffered, stops the writer thread and closes an owned descriptor. Waits at
    /// most `timeout` for the writer (a blocked pipe must not block shutdown for ever); returns
    /// whether everything buffered was written in time. Later lines are dropped.
    @discardableResult
    package func close(timeout: Duration = .seconds(5)) -> Bool {
        let wakeWriter = state.withLock { state -> Bool in
            guard !state.closing else { return false }
            state.closing = true
            let idle = state.writerIdle
            state.writerIdle = false
            return idle
        }
        if wakeWriter { wake.signal() }
        let nanoseconds = Int(min(timeout.components.seconds, 3_600)) * 1_000_000_000
            + Int(timeout.components.attoseconds / 1_000_000_000)
        let finished = done.wait(timeout: .now() + .nanoseconds(max(0, nanoseconds))) == .success
        if finished { done.signal() }  // a second close returns at once
        return finished
    }

    private func runWriter() {
        var batch: [UInt8] = []
        var descriptor: Int32 = -1
        while true {
            var lines = 0
            var retired: [Int32] = []
            let closing = state.withLock { state -> Bool in
                // Descriptors replaced since the last batch: no write uses them any more.
                if ownsDescriptor { swap(&retired, &state.retired) } else { state.retired = [] }
                descriptor = state.descriptor
                if state.pending.isEmpty {
                    if !state.closing { state.writerIdle = true }
                    return state.closing
                }
                // Swap buffers: the event loop keeps appending into the capacity the writer freed.
                swap(&batch, &state.pending)
                lines = state.pendingLines
                state.pendingLines = 0
                return false
            }
            retired.forEach(closeDescriptor)
            if batch.isEmpty {
                if closing { break }
                wake.wait()
                continue
            }
            let complete = writeAll(batch, to: descriptor)
            batch.removeAll(keepingCapacity: true)
            state.withLock { state in
                if complete { state.written &+= UInt64(lines) } else { state.dropped &+= UInt64(lines) }
            }
            if !complete { onDrop?(lines) }
        }
        if ownsDescriptor { closeDescriptor(state.withLock { $0.descriptor }) }
        state.withLock { $0.finished = true }
        done.signal()
    }

    /// Writes every byte, continuing short writes and retrying `EINTR`; false on any other error.
    private func writeAll(_ bytes: [UInt8], to fileDescriptor: Int32) -> Bool {
        bytes.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let count = write(fileDescriptor, buffer.baseAddress! + offset, buffer.count - offset)
                if count > 0 {
                    offset += count
                } else if count < 0, errno == EINTR {
                    continue
                } else {
                    return false
                }
            }
            return true
        }
    }
}

/// `close(2)`, out of the class whose own `close(timeout:)` hides it.
private func closeDescriptor(_ descriptor: Int32) {
    _ = close(descriptor)
}

/// `open(2)` for appending, created 0640, out of the class whose own `open(_:)` hides it.
private func openFile(_ path: String) -> Int32 {
    open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o640)
}
