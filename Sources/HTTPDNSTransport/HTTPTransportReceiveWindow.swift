/// The flow control of one response body that waits for a reader: when the transfer must pause and
/// when it may go on. A value with no I/O; ``HTTPTransportReceiveBuffer`` holds it behind its lock.
///
/// Two marks instead of one so that a reader taking one chunk at a time does not pause and resume
/// the transfer once per chunk: the transfer pauses when ``limit`` bytes wait unread, and resumes
/// only when the reader has brought them down to ``resumeBelow``.
package struct HTTPTransportReceiveWindow: Sendable, Hashable {
    /// Most bytes waiting unread: a chunk that would go past it is refused (the transfer pauses),
    /// unless nothing waits at all (a chunk larger than the limit is taken alone).
    package let limit: Int
    /// The transfer resumes once no more than this many bytes wait unread.
    package let resumeBelow: Int
    /// Bytes delivered and not read yet.
    package private(set) var buffered = 0
    /// Whether a chunk was refused and the transfer has not been resumed since.
    package private(set) var isPaused = false

    /// - Precondition: `0 <= resumeBelow < limit`.
    package init(limit: Int, resumeBelow: Int) {
        precondition(limit > 0 && resumeBelow >= 0 && resumeBelow < limit, "need 0 <= resumeBelow < limit")
        self.limit = limit
        self.resumeBelow = resumeBelow
    }

    /// The transfer has a chunk of `count` bytes. True: deliver it (its receiver then calls
    /// ``append(_:)``); false: refuse it, the transfer pauses until ``read(_:)`` says to resume.
    ///
    /// Counting on arrival rather than here keeps the window true to what waits: a chunk the layer
    /// above keeps for itself (a redirect's body) never reaches the buffer, and is never counted.
    package mutating func offer(_ count: Int) -> Bool {
        guard buffered > 0, buffered + count > limit else { return true }
        isPaused = true
        return false
    }

    /// A chunk of `count` bytes reached the buffer.
    package mutating func append(_ count: Int) {
        buffered += count
    }

    /// The reader took `count` bytes. True when the transfer must be resumed now (exactly once per pause).
    package mutating func read(_ count: Int) -> Bool {
        buffered = max(0, buffered - count)
        guard isPaused, buffered <= resumeBelow else { return false }
        isPaused = false
        return true
    }
}
