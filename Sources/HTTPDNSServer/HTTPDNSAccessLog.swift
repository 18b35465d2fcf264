import HTTPDNSCore
import HTTPDNSOperations

/// The optional access log: one JSON line per query, written to a file
/// descriptor by a thread of its own so that a slow disk or pipe never stalls the event loop.
///
/// Logging a query encodes the line into a buffer under a lock and returns; the writer thread takes the
/// whole buffer at once and `write(2)`s it. The buffer is bounded (``Configuration/maxBufferedBytes``):
/// when the writer lags that far behind, new lines are dropped and counted (``dropped``, and the
/// metrics' `httpdns_access_log_dropped_total`) rather than queued without end. A failed write
/// (disk full, closed pipe) drops that batch and counts its lines the same way. Lines are never
/// torn: each batch is whole lines, and a short write is continued.
///
/// Call ``close(timeout:)`` before exit: it writes what is buffered and stops the thread. A log opened by
/// path can be ``reopen()``ed after logrotate moved the file (on SIGHUP, say).
public final class HTTPDNSAccessLog: Sendable {
    /// Bounds of the log.
    public struct Configuration: Sendable, Hashable {
        /// Most bytes waiting for the writer before lines are dropped. Default 4 MiB (about 20,000
        /// lines).
        public var maxBufferedBytes: Int = 4 << 20

        public init(maxBufferedBytes: Int = 4 << 20) {
            self.maxBufferedBytes = maxBufferedBytes
        }
    }

    /// The writer (shared with the stub's query log).
    private let lines: HTTPDNSLineLog

    private init(lines: HTTPDNSLineLog) {
        self.lines = lines
    }

    /// Logs to `fileDescriptor` (stdout, a pipe, a file), which stays open after ``close(timeout:)`` unless
    /// `ownsDescriptor`.
    ///
    /// - Parameters:
    ///   - metrics: counts dropped lines too, when given.
    package convenience init(
        fileDescriptor: Int32, ownsDescriptor: Bool = false, configuration: Configuration = .init(),
        metrics: HTTPDNSServerMetrics? = nil
    ) {
        self.init(lines: HTTPDNSLineLog(
            fileDescriptor: fileDescriptor, ownsDescriptor: ownsDescriptor, maxBufferedBytes: configuration.maxBufferedBytes,
            onDrop: Self.counter(metrics)))
    }

    /// Opens (creating, mode 0640) and appends to the file at `path`; `-` is standard output.
    ///
    /// - Throws: ``HTTPDNSServiceError`` `.invalidConfiguration` naming the path and the `errno` text.
    public convenience init(path: String, configuration: Configuration = .init(), metrics: HTTPDNSServerMetrics? = nil) throws(HTTPDNSServiceError) {
        do throws(HTTPDNSLineLog.OpenFailure) {
            self.init(lines: try HTTPDNSLineLog(path: path, maxBufferedBytes: configuration.maxBufferedBytes, onDrop: Self.counter(metrics)))
        } catch {
            throw Self.failure(error)
        }
    }

    /// Opens the log's path again and sends later lines there: after logrotate renamed the file,
    /// the log continues in a new one. Lines already handed to the old file finish there. Does
    /// nothing for a log given as a descriptor (or standard output).
    ///
    /// - Throws: ``HTTPDNSServiceError`` `.invalidConfiguration` when the path cannot be opened; the
    ///   log then goes on in the old file.
    public func reopen() throws(HTTPDNSServiceError) {
        do throws(HTTPDNSLineLog.OpenFailure) {
            try lines.reopen()
        } catch {
            throw Self.failure(error)
        }
    }

    /// Queues `line`; never blocks on I/O. Dropped (and counted) when the buffer is full or the log
    /// is closed.
    package func log(_ line: HTTPDNSAccessLogLine) {
        lines.log { line.append(to: &$0) }
    }

    /// Lines written so far.
    public var written: UInt64 { lines.written }

    /// Lines dropped so far (writer too far behind, write failed, or logged after ``close(timeout:)``).
    public var dropped: UInt64 { lines.dropped }

    /// Writes what is buffered, stops the writer thread and closes an owned descriptor. Waits at
    /// most `timeout` for the writer (a blocked pipe must not block shutdown for ever); returns
    /// whether everything buffered was written in time. Later lines are dropped.
    @discardableResult
    public func close(timeout: Duration = .seconds(5)) -> Bool {
        lines.close(timeout: timeout)
    }

    private static func counter(_ metrics: HTTPDNSServerMetrics?) -> (@Sendable (Int) -> Void)? {
        guard let metrics else { return nil }
        return { @Sendable count in metrics.accessLogDropped(count) }
    }

    private static func failure(_ error: HTTPDNSLineLog.OpenFailure) -> HTTPDNSServiceError {
        HTTPDNSServiceError(.invalidConfiguration, "cannot open access log \(error.path): \(error.reason)")
    }
}
