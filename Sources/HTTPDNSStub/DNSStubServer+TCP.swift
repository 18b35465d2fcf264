#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import DNSStubCore
import Dispatch
import HTTPDNSCore

extension DNSStubServer {
    /// Serves one TCP connection on its own thread (RFC 7766): 2-byte length framing, any number of
    /// queries, resolved concurrently (§6.2.1.1): each query read is handed to the resolver at once,
    /// up to ``Configuration/tcpMaxInFlight`` per connection, and its answer is written as soon as
    /// it is ready, in any order (the message ID pairs it with its query), so one slow name holds
    /// no query behind it. Answers made elsewhere (an upstream's thread) are queued and the
    /// connection thread, woken through a pipe, writes them: no other thread blocks on this socket.
    ///
    /// Closed after ``Configuration/tcpIdleTimeout`` with no query read or under way, when a
    /// message or an answer takes longer than ``Configuration/tcpMessageTimeout``, on a message the
    /// front drops, or at ``stop()`` once every query already received (read, or queued in the
    /// kernel) is answered. A client that closes its side after its queries still gets the answers.
    func serveTCP(_ connection: DNSStubSocket, allowed: Bool, client: HTTPDNSIPAddress) {
        guard let answers = DNSStubTCPAnswers() else { return }
        var buffer: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16_384)
        var deadline = ContinuousClock.now + configuration.tcpIdleTimeout
        // No more reading: the client closed its side, or the drain read what had arrived.
        var readDone = false
        while true {
            for answer in answers.takeReady() {
                guard write(answer, to: connection) else { return }
            }
            // Every whole message buffered, while the connection may have more under way.
            while buffer.count >= 2, answers.inFlight < configuration.tcpMaxInFlight {
                let length = Int(buffer[0]) << 8 | Int(buffer[1])
                guard buffer.count >= 2 + length else { break }
                let message = Array(buffer[2..<(2 + length)])
                buffer.removeFirst(2 + length)
                guard handleTCP(message, allowed: allowed, client: client, answers: answers, connection: connection) else { return }
            }
            let (inFlight, hasReady) = answers.status
            let wholeMessage = buffer.count >= 2 && buffer.count >= 2 + (Int(buffer[0]) << 8 | Int(buffer[1]))
            if readDone, inFlight == 0, !hasReady, !wholeMessage { return }
            // A connection with queries under way is not idle: the resolver bounds each answer.
            if inFlight == 0, !hasReady {
                guard ContinuousClock.now < deadline else { return }
            }
            let draining = isStopped
            if draining, !readDone {
                // The drain: what has already arrived is read (no wait), then nothing more.
                _ = readAvailable(connection, into: &buffer, chunk: &chunk, deadline: &deadline)
                readDone = true
                continue
            }
            let reading = !readDone && inFlight < configuration.tcpMaxInFlight && !wholeMessage
            let left = deadline - ContinuousClock.now
            let wait = min(Int32(Self.slice), Int32(clamping: max(0, left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000 + 1)))
            let events = answers.wait(connection: connection, reading: reading, milliseconds: hasReady ? 0 : inFlight > 0 ? Int32(Self.slice) : wait)
            guard reading, events & Int16(POLLIN | POLLHUP | POLLERR) != 0 else { continue }
            if !readAvailable(connection, into: &buffer, chunk: &chunk, deadline: &deadline) { readDone = true }
        }
    }

    /// Reads what the socket holds now into `buffer` (up to ``maxTCPBuffer`` bytes unparsed);
    /// false when the client closed its side or the connection failed. The first byte of a
    /// message starts its deadline.
    private func readAvailable(_ connection: DNSStubSocket, into buffer: inout [UInt8], chunk: inout [UInt8], deadline: inout ContinuousClock.Instant) -> Bool {
        while buffer.count < Self.maxTCPBuffer {
            let count = chunk.withUnsafeMutableBytes { recv(connection.fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            if count == 0 { return false }
            if count < 0 {
                if errno == EINTR { continue }
                return errno == EAGAIN || errno == EWOULDBLOCK
            }
            if buffer.isEmpty { deadline = ContinuousClock.now + configuration.tcpMessageTimeout }
            buffer += chunk[0..<count]
        }
        return true
    }

    /// Unparsed bytes a connection may hold: two largest messages. Past it the thread reads no more
    /// until its queries under way are answered (the kernel's buffer, then TCP, hold the client back).
    static let maxTCPBuffer = 2 * (65_535 + 2)

    /// One TCP message: an answer the front makes is written at once, a query to resolve is handed
    /// over (its answer queued in `answers`); false to close the connection (a message the front
    /// drops, or a client too slow to take an answer).
    private func handleTCP(
        _ message: [UInt8], allowed: Bool, client: HTTPDNSIPAddress, answers: DNSStubTCPAnswers, connection: DNSStubSocket
    ) -> Bool {
        switch rateLimited(front.receive(message, transport: .tcp, clientAllowed: allowed), client: client) {
        case .drop:
            return false
        case .reply(let bytes, let reason):
            resolver.frontReplied(.tcp, reason)
            return write(Self.framed(bytes), to: connection)
        case .resolve(let request):
            if let (response, _) = resolver.answerAtOnce(request, client: client) {
                return write(Self.framed(front.encode(response, for: request)), to: connection)
            }
            answers.started()
            let front = front
            resolver.answer(request, client: client) { response in
                answers.finished(Self.framed(front.encode(response, for: request)))
            }
            return true
        }
    }

    static func framed(_ answer: [UInt8]) -> [UInt8] {
        [UInt8(answer.count >> 8), UInt8(answer.count & 0xFF)] + answer
    }

    /// Writes all of `bytes` within ``Configuration/tcpMessageTimeout``; false when the client is
    /// gone or too slow.
    private func write(_ bytes: [UInt8], to connection: DNSStubSocket) -> Bool {
        let deadline = ContinuousClock.now + configuration.tcpMessageTimeout
        var sent = 0
        while sent < bytes.count {
            guard ContinuousClock.now < deadline else { return false }
            let count = bytes[sent...].withUnsafeBytes { send(connection.fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT)) }
            if count > 0 {
                sent += count
            } else if count < 0, errno == EAGAIN || errno == EINTR {
                _ = connection.wait(for: Int16(POLLOUT), milliseconds: Self.slice)
            } else {
                return false
            }
        }
        return true
    }
}

/// A TCP connection's answers made on other threads, waiting for the connection thread to write
/// them, and the count of its queries under way. A pipe wakes the connection thread when an
/// answer is queued; the completions never touch the socket.
final class DNSStubTCPAnswers: Sendable {
    private struct State {
        var ready: [[UInt8]] = []
        var inFlight = 0
    }

    private let state = HTTPDNSLock(State())
    /// The pipe's read and write ends (non-blocking, close-on-exec).
    private let wakeRead: Int32
    private let wakeWrite: Int32

    init?() {
        var ends: [Int32] = [0, 0]
        guard pipe(&ends) == 0 else { return nil }
        for fd in ends {
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        }
        wakeRead = ends[0]
        wakeWrite = ends[1]
    }

    deinit {
        close(wakeRead)
        close(wakeWrite)
    }

    /// A query handed to the resolver.
    func started() {
        state.withLock { $0.inFlight += 1 }
    }

    /// Its answer, framed; wakes the connection thread.
    func finished(_ framed: [UInt8]) {
        state.withLock {
            $0.ready.append(framed)
            $0.inFlight -= 1
        }
        var one: UInt8 = 1
        _ = Glibc.write(wakeWrite, &one, 1)
    }

    var inFlight: Int { state.withLock { $0.inFlight } }
    /// Queries under way, and whether answers wait to be written, read together.
    var status: (inFlight: Int, hasReady: Bool) { state.withLock { ($0.inFlight, !$0.ready.isEmpty) } }

    /// The answers queued so far, oldest first.
    func takeReady() -> [[UInt8]] {
        state.withLock { state in
            defer { state.ready.removeAll() }
            return state.ready
        }
    }

    /// Waits up to `milliseconds` for an answer to be queued or, when `reading`, for the
    /// connection to have bytes (or to close); the connection's events seen.
    func wait(connection: DNSStubSocket, reading: Bool, milliseconds: Int32) -> Int16 {
        var entries = [pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0),
                       pollfd(fd: reading ? connection.fd : -1, events: Int16(POLLIN), revents: 0)]
        guard poll(&entries, 2, milliseconds) > 0 else { return 0 }
        if entries[0].revents != 0 {
            var drained = [UInt8](repeating: 0, count: 64)
            while read(wakeRead, &drained, drained.count) > 0 {}
        }
        return entries[1].revents
    }
}
