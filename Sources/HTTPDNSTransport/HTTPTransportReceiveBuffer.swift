import Foundation
import HTTPDNSCore

/// A response body on its way to a reader that may be slower than the network: it holds at most
/// a limit of bytes unread (4 MiB by default), and the transfer waits (libcurl's write pause) while
/// it is full.
///
/// Wiring: the request carries it (``HTTPTransportRequest/receiveBuffer``), so the transfer asks it
/// before delivering each chunk; the transfer's delegate (or whatever it forwards the body to)
/// hands it the chunks and the end (``append(_:)``, ``finish(throwing:)``); the reader iterates
/// ``makeStream(onCancel:)``. When a chunk would go past the limit the write callback returns
/// `CURL_WRITEFUNC_PAUSE` without taking it (libcurl keeps it and delivers it again on resume, so
/// nothing is lost or reordered); once the reader has brought the buffer down to the resume mark
/// (1 MiB by default) the loop thread is asked to call `curl_easy_pause(CURLPAUSE_CONT)`; the
/// arithmetic is ``HTTPTransportReceiveWindow``'s.
///
/// What it bounds is this buffer. Over HTTP/1.1 a paused transfer reads nothing more from its
/// socket (the kernel's buffers and TCP flow control hold the server back). Over HTTP/2, libcurl
/// 7.88 closes the stream's window on pause but cannot take back what it granted before (its
/// `HTTP2_HUGE_WINDOW_SIZE`, 32 MiB), and keeps what the server sends within it in its own pause
/// buffer: up to that much more per paused stream. (Observed with nginx, 256 MiB read slowly grew
/// the process by 7.2 MiB over HTTP/2, 4.1 MiB over HTTP/1.1.)
package final class HTTPTransportReceiveBuffer: Sendable {
    /// The default limit: 4 MiB, 256 of libcurl's 16 KiB chunks. A reader that keeps up with the
    /// network never makes the transfer wait; one that does not costs at most this much.
    package static let defaultLimit = 4 << 20
    /// The default resume mark: 1 MiB, so a paused transfer resumes with 3 MiB of room and does
    /// not stop and start at every chunk the reader takes.
    package static let defaultResumeBelow = 1 << 20

    private struct State {
        var window: HTTPTransportReceiveWindow
        /// Unread chunks start at `next`; read ones before it are emptied, dropped in batches.
        var chunks: [Data] = []
        var next = 0
        /// How the body ended, once it has; a failure is reported once, then reads as the end.
        var end: Result<Void, any Error>?
        /// The reader went away (released the stream or was cancelled): nothing more is kept.
        var cancelled = false
        /// The reader, when it waits for the next chunk.
        var reader: CheckedContinuation<Data?, any Error>?
        /// Transfers refused a chunk and not resumed yet.
        var paused: [CurlTransfer] = []
        /// Stops the transfer when the reader goes away before the end.
        var onCancel: (@Sendable () -> Void)?

        mutating func takePaused() -> [CurlTransfer] {
            defer { paused = [] }
            return paused
        }
    }

    private enum Step {
        case chunk(Data)
        case end
        case failure(any Error)
        case wait
    }

    private let state: HTTPDNSLock<State>

    /// - Parameters:
    ///   - limit: most bytes held unread. Default ``defaultLimit`` (4 MiB).
    ///   - resumeBelow: a paused transfer resumes when no more than this waits. Default
    ///     ``defaultResumeBelow`` (1 MiB).
    /// - Precondition: `0 <= resumeBelow < limit`.
    package init(limit: Int = defaultLimit, resumeBelow: Int = defaultResumeBelow) {
        state = HTTPDNSLock(State(window: HTTPTransportReceiveWindow(limit: limit, resumeBelow: resumeBelow)))
    }

    /// The flow-control state now: the marks, the bytes waiting, whether the transfer is paused.
    package var window: HTTPTransportReceiveWindow { state.withLock { $0.window } }

    // MARK: The transfer's side (loop thread)

    /// Whether the transfer may deliver a chunk of `count` bytes now; false records `transfer` as
    /// paused, to be resumed when the reader has made room.
    func offer(_ count: Int, from transfer: CurlTransfer) -> Bool {
        state.withLock { state in
            // Nothing more will be read: deliver (and drop) rather than stall a transfer being stopped.
            guard !state.cancelled, state.end == nil else { return true }
            guard state.window.offer(count) else {
                if !state.paused.contains(where: { $0 === transfer }) { state.paused.append(transfer) }
                return false
            }
            return true
        }
    }

    // MARK: The body's side

    /// The next piece of the body, in order. Dropped once the reader went away or after the end.
    package func append(_ data: Data) {
        guard !data.isEmpty else { return }
        let (reader, resume) = state.withLock { state -> (CheckedContinuation<Data?, any Error>?, [CurlTransfer]) in
            guard !state.cancelled, state.end == nil else { return (nil, []) }
            state.window.append(data.count)
            guard let reader = state.reader else {
                state.chunks.append(data)
                return (nil, [])
            }
            // A waiting reader has read everything before: the chunk goes straight to it.
            state.reader = nil
            return (reader, state.window.read(data.count) ? state.takePaused() : [])
        }
        for transfer in resume { transfer.resumeReceiving() }
        reader?.resume(returning: data)
    }

    /// The body is complete (`error` nil) or failed; the reader gets what waits first, then the end.
    package func finish(throwing error: (any Error)? = nil) {
        let (reader, outcome) = state.withLock { state -> (CheckedContinuation<Data?, any Error>?, Result<Data?, any Error>) in
            guard !state.cancelled, state.end == nil else { return (nil, .success(nil)) }
            state.end = error.map { Result<Void, any Error>.failure($0) } ?? .success(())
            state.paused = []
            state.onCancel = nil
            guard let reader = state.reader else { return (nil, .success(nil)) }
            state.reader = nil
            if let error {
                state.end = .success(())
                return (reader, .failure(error))
            }
            return (reader, .success(nil))
        }
        reader?.resume(with: outcome)
    }

    // MARK: The reader's side

    /// The body as a stream of chunks, for one reader. Cancelling the reading task, or releasing the
    /// stream before its end, calls `onCancel` (once; meant to stop the transfer), drops what waits,
    /// and ends the iteration without an error, as `AsyncThrowingStream` does.
    package func makeStream(onCancel: @escaping @Sendable () -> Void) -> AsyncThrowingStream<Data, any Error> {
        state.withLock { state in
            if state.end == nil, !state.cancelled { state.onCancel = onCancel }
        }
        let reader = Reader(buffer: self)
        return AsyncThrowingStream(unfolding: { try await reader.next() })
    }

    /// What the stream's closure holds: when the stream is released, so is this, and the buffer is
    /// cancelled (a stream made with `unfolding:` has no termination handler of its own).
    private final class Reader: Sendable {
        let buffer: HTTPTransportReceiveBuffer

        init(buffer: HTTPTransportReceiveBuffer) {
            self.buffer = buffer
        }

        deinit {
            buffer.cancel()
        }

        func next() async throws -> Data? {
            try await buffer.next()
        }
    }

    private func next() async throws -> Data? {
        switch step(parking: nil) {
        case .chunk(let chunk): return chunk
        case .end: return nil
        case .failure(let error): throw error
        case .wait: break
        }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                switch step(parking: continuation) {
                case .chunk(let chunk): continuation.resume(returning: chunk)
                case .end: continuation.resume(returning: nil)
                case .failure(let error): continuation.resume(throwing: error)
                case .wait: break
                }
            }
        } onCancel: {
            cancel()
        }
    }

    /// Takes the next chunk or the end; otherwise parks `reader` (when given) until one comes.
    private func step(parking reader: CheckedContinuation<Data?, any Error>?) -> Step {
        let (step, resume) = state.withLock { state -> (Step, [CurlTransfer]) in
            if state.next < state.chunks.count {
                let chunk = state.chunks[state.next]
                state.chunks[state.next] = Data()
                state.next += 1
                if state.next == state.chunks.count {
                    state.chunks.removeAll(keepingCapacity: true)
                    state.next = 0
                } else if state.next >= 256 {
                    state.chunks.removeFirst(state.next)
                    state.next = 0
                }
                return (.chunk(chunk), state.window.read(chunk.count) ? state.takePaused() : [])
            }
            if state.cancelled { return (.end, []) }
            switch state.end {
            case .failure(let error):
                state.end = .success(())
                return (.failure(error), [])
            case .success:
                return (.end, [])
            case nil:
                if let reader { state.reader = reader }
                return (.wait, [])
            }
        }
        for transfer in resume { transfer.resumeReceiving() }
        return step
    }

    /// The reader went away: drop what waits, end a waiting read, and stop the transfer if the body
    /// has not ended.
    func cancel() {
        let (reader, onCancel) = state.withLock { state -> (CheckedContinuation<Data?, any Error>?, (@Sendable () -> Void)?) in
            guard !state.cancelled else { return (nil, nil) }
            state.cancelled = true
            state.chunks = []
            state.next = 0
            state.paused = []
            defer { state.onCancel = nil; state.reader = nil }
            return (state.reader, state.end == nil ? state.onCancel : nil)
        }
        reader?.resume(returning: nil)
        onCancel?()
    }
}
