#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import DNSWire
import HTTPDNSCore

/// One query/answer exchange with one server, run on a ``BlockingPool`` thread (blocking, bounded
/// by a deadline, stoppable between poll slices).
///
/// RFC 5452 rules: a fresh socket per query so that the kernel picks a random source port; a reply
/// counts only if it comes from the server's address and port, is a response, carries the query's
/// ID and repeats its question. Anything else is dropped and the wait goes on until the deadline.
struct DNSSocketExchange: Sendable {
    /// Longest poll before checking for cancellation again.
    static let slice: Duration = .milliseconds(50)

    var query: [UInt8]
    var queryMessage: DNSMessage
    var server: SocketAddress
    var deadline: ContinuousClock.Instant
    var tcpFallback: Bool

    private enum Verdict {
        case accepted(DNSMessage)
        case foreign
        case malformed(DNSWireError)
    }

    /// UDP first, then TCP when the answer is truncated (RFC 7766 §5).
    func run(shouldStop: () -> Bool) -> Result<[UInt8], HTTPDNSError> {
        do throws(HTTPDNSError) {
            let (bytes, message) = try udp(shouldStop: shouldStop)
            guard message.isTruncated, tcpFallback else { return .success(bytes) }
            return .success(try tcp(shouldStop: shouldStop))
        } catch {
            var error = error
            error.source = error.source ?? server.description
            return .failure(error)
        }
    }

    private func verdict(_ bytes: [UInt8]) -> Verdict {
        guard bytes.count >= 2, bytes[0] == UInt8(queryMessage.id >> 8), bytes[1] == UInt8(queryMessage.id & 0xFF) else {
            return .foreign
        }
        let message: DNSMessage
        do {
            message = try DNSMessage(decoding: bytes)
        } catch let error as DNSWireError {
            return .malformed(error)
        } catch {
            return .foreign
        }
        guard message.isResponse, message.hasSameQuestions(as: queryMessage) else { return .foreign }
        return .accepted(message)
    }

    /// Time left for one poll, or the error to stop with.
    private func nextSlice(shouldStop: () -> Bool, malformed: DNSWireError?) throws(HTTPDNSError) -> Int32 {
        if shouldStop() { throw HTTPDNSError(.cancelled, "exchange abandoned") }
        let remaining = deadline - ContinuousClock.now
        if remaining <= .zero {
            if let malformed { throw HTTPDNSError.malformed("\(malformed)") }
            throw HTTPDNSError(.timedOut, "no matching answer in time")
        }
        return min(remaining, Self.slice).pollMilliseconds
    }

    private func udp(shouldStop: () -> Bool) throws(HTTPDNSError) -> ([UInt8], DNSMessage) {
        let fd = try PosixSocket.open(family: server.family, type: PosixSocket.datagram)
        defer { close(fd) }
        // connect() binds a random ephemeral port and lets the kernel drop most foreign datagrams;
        // the source is still checked below, as a connected socket's filter is not a promise.
        let connected = server.withSockAddr { connect(fd, $0, $1) }
        guard connected == 0 else { throw PosixSocket.error("connect") }
        let sent = query.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, PosixSocket.noSignal) }
        guard sent == query.count else { throw PosixSocket.error("send") }

        var buffer = [UInt8](repeating: 0, count: 65_535)
        var malformed: DNSWireError?
        while true {
            let milliseconds = try nextSlice(shouldStop: shouldStop, malformed: malformed)
            guard try PosixSocket.wait(fd, for: Int16(POLLIN), milliseconds: milliseconds) != 0 else { continue }
            var from = sockaddr_storage()
            var fromLength = socklen_t(MemoryLayout<sockaddr_storage>.size)
            let count = buffer.withUnsafeMutableBytes { raw in
                withUnsafeMutablePointer(to: &from) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                        recvfrom(fd, raw.baseAddress, raw.count, 0, $0, &fromLength)
                    }
                }
            }
            if count < 0 {
                if errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR { continue }
                // ECONNREFUSED: the server's port is closed (ICMP port unreachable).
                throw PosixSocket.error("recv")
            }
            let source = withUnsafeBytes(of: &from) { SocketAddress(storage: $0.baseAddress!) }
            guard source == server else { continue }
            let bytes = Array(buffer[0..<count])
            switch verdict(bytes) {
            case .accepted(let message): return (bytes, message)
            case .malformed(let error): malformed = error
            case .foreign: continue
            }
        }
    }

    private func tcp(shouldStop: () -> Bool) throws(HTTPDNSError) -> [UInt8] {
        let fd = try PosixSocket.open(family: server.family, type: PosixSocket.stream)
        defer { close(fd) }
        let started = server.withSockAddr { connect(fd, $0, $1) }
        if started != 0 {
            guard errno == EINPROGRESS || errno == EINTR else { throw PosixSocket.error("tcp connect") }
            while try PosixSocket.wait(fd, for: Int16(POLLOUT), milliseconds: nextSlice(shouldStop: shouldStop, malformed: nil)) == 0 {}
            var socketError: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            getsockopt(fd, SOL_SOCKET, SO_ERROR, &socketError, &length)
            guard socketError == 0 else { throw PosixSocket.error("tcp connect", socketError) }
        }

        let frame = DNSTCPFrameReader.frame(query)
        var written = 0
        while written < frame.count {
            let count = frame[written...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, PosixSocket.noSignal) }
            if count < 0 {
                guard errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR else { throw PosixSocket.error("tcp send") }
                _ = try PosixSocket.wait(fd, for: Int16(POLLOUT), milliseconds: nextSlice(shouldStop: shouldStop, malformed: nil))
                continue
            }
            written += count
        }

        var reader = DNSTCPFrameReader()
        var buffer = [UInt8](repeating: 0, count: 16_384)
        var malformed: DNSWireError?
        while true {
            while let bytes = reader.nextMessage() {
                switch verdict(bytes) {
                case .accepted: return bytes
                case .malformed(let error): malformed = error
                case .foreign: continue
                }
            }
            let milliseconds = try nextSlice(shouldStop: shouldStop, malformed: malformed)
            guard try PosixSocket.wait(fd, for: Int16(POLLIN), milliseconds: milliseconds) != 0 else { continue }
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count < 0 {
                if errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR { continue }
                throw PosixSocket.error("tcp recv")
            }
            if count == 0 {
                if let malformed { throw HTTPDNSError.malformed("\(malformed)") }
                throw HTTPDNSError(.transport, "tcp connection closed after \(reader.bufferedCount) bytes of answer")
            }
            reader.append(buffer[0..<count])
        }
    }
}
