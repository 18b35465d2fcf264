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
    /// queries, answered in the order received (each waits for the one before; RFC 7766 §6.2.1.1
    /// allows out-of-order answers, this cut does not give them). Closed after
    /// ``Configuration/tcpIdleTimeout`` without a query, when a message or an answer takes longer
    /// than ``Configuration/tcpMessageTimeout``, on a message the front drops, or at ``stop()``
    /// once the queries already received (read, or queued in the kernel) are answered.
    func serveTCP(_ connection: DNSStubSocket, allowed: Bool, client: HTTPDNSIPAddress) {
        var buffer: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16_384)
        var deadline = ContinuousClock.now + configuration.tcpIdleTimeout
        while true {
            // Every whole message buffered, in order.
            while buffer.count >= 2 {
                let length = Int(buffer[0]) << 8 | Int(buffer[1])
                guard buffer.count >= 2 + length else { break }
                let message = Array(buffer[2..<(2 + length)])
                buffer.removeFirst(2 + length)
                guard let answer = answerTCP(message, allowed: allowed, client: client),
                      write([UInt8(answer.count >> 8), UInt8(answer.count & 0xFF)] + answer, to: connection)
                else { return }
                deadline = ContinuousClock.now + (buffer.isEmpty ? configuration.tcpIdleTimeout : configuration.tcpMessageTimeout)
            }
            let draining = isStopped
            let left = deadline - ContinuousClock.now
            guard left > .zero else { return }
            // Draining: only what has already arrived is read (no wait), then the connection closes.
            let milliseconds = draining ? 0 : min(Int32(Self.slice), Int32(clamping: left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000 + 1))
            guard draining || connection.wait(for: Int16(POLLIN), milliseconds: milliseconds) != 0 else { continue }
            let count = chunk.withUnsafeMutableBytes { recv(connection.fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            if count == 0 { return }
            if count < 0 {
                if errno == EINTR || (errno == EAGAIN && !draining) { continue }
                return
            }
            // The first byte of a message starts its deadline; an idle connection keeps the idle one.
            if buffer.isEmpty { deadline = ContinuousClock.now + configuration.tcpMessageTimeout }
            buffer += chunk[0..<count]
        }
    }

    /// The answer to one TCP message; nil to close the connection (a message the front drops).
    private func answerTCP(_ message: [UInt8], allowed: Bool, client: HTTPDNSIPAddress) -> [UInt8]? {
        switch rateLimited(front.receive(message, transport: .tcp, clientAllowed: allowed), client: client) {
        case .drop:
            return nil
        case .reply(let bytes, let reason):
            resolver.frontReplied(.tcp, reason)
            return bytes
        case .resolve(let request):
            // This thread is the connection's own: waiting here blocks no task.
            let done = DispatchSemaphore(value: 0)
            let result = HTTPDNSLock<DNSStubResponse?>(nil)
            resolver.answer(request, client: client) { response in
                result.withLock { $0 = response }
                done.signal()
            }
            done.wait()
            return result.withLock { $0 }.map { front.encode($0, for: request) }
        }
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
