import Foundation
import HTTPDNSCore
import HTTPDNSTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// A TCP relay on 127.0.0.1 in front of `target` whose answers arrive late: every chunk the target
/// sends is held `delay` before it is passed on (what the client sends goes on at once). Row 12c2's
/// "DoT server a network away": this kernel has no netem, so the relay delays. Two threads per
/// connection (one per direction), for the bench's few connections only.
final class DelayingTCPRelay: @unchecked Sendable {
    let port: UInt16
    private let listener: Int32
    private let stopped = HTTPDNSLock(false)
    private let connections = HTTPDNSLock<[Int32]>([])

    init(target: UInt16, delay: Duration) throws {
        let loopback = HTTPDNSIPAddress("127.0.0.1")!
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw BenchFailure("relay: socket failed") }
        let bound = Dnsmasq.withSockAddr(loopback, 0) { bind(fd, $0, $1) }
        guard bound == 0, listen(fd, 64) == 0 else {
            close(fd)
            throw BenchFailure("relay: cannot listen on 127.0.0.1")
        }
        var address = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
        listener = fd
        port = UInt16(bigEndian: address.sin_port)
        let (seconds, attoseconds) = delay.components
        let delayMicroseconds = UInt32(seconds * 1_000_000 + attoseconds / 1_000_000_000_000)
        let listenerFD = listener
        Thread.detachNewThread { [self] in
            while true {
                let client = accept(listenerFD, nil, nil)
                guard client >= 0 else { return }
                let upstream = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
                guard upstream >= 0, Dnsmasq.withSockAddr(loopback, target, { connect(upstream, $0, $1) }) == 0 else {
                    close(client)
                    if upstream >= 0 { close(upstream) }
                    continue
                }
                var on: Int32 = 1
                for fd in [client, upstream] { setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &on, socklen_t(MemoryLayout<Int32>.size)) }
                connections.withLock { $0 += [client, upstream] }
                Thread.detachNewThread { Self.pump(from: client, to: upstream, delayMicroseconds: 0) }
                Thread.detachNewThread { Self.pump(from: upstream, to: client, delayMicroseconds: delayMicroseconds) }
            }
        }
    }

    /// Copies `source` to `destination` until either closes, holding each chunk `delayMicroseconds`.
    private static func pump(from source: Int32, to destination: Int32, delayMicroseconds: UInt32) {
        var buffer = [UInt8](repeating: 0, count: 16_384)
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(source, $0.baseAddress, $0.count, 0) }
            guard count > 0 else { break }
            if delayMicroseconds > 0 { usleep(delayMicroseconds) }
            var sent = 0
            while sent < count {
                let written = buffer.withUnsafeBytes { send(destination, $0.baseAddress! + sent, count - sent, Int32(MSG_NOSIGNAL)) }
                guard written > 0 else { break }
                sent += written
            }
            guard sent == count else { break }
        }
        shutdown(destination, Int32(SHUT_WR))
    }

    /// Stops accepting and closes every relayed connection (their threads end).
    func stop() {
        guard !stopped.withLock({ let was = $0; $0 = true; return was }) else { return }
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
        for fd in connections.withLock({ $0 }) { shutdown(fd, Int32(SHUT_RDWR)) }
    }

    deinit {
        stop()
    }
}
