#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import DNSSockets
import HTTPDNSCore

/// One socket descriptor, closed when the last holder lets go: a UDP answer sent from a task after
/// the server stopped never writes into a descriptor number the process has reused since.
final class DNSStubSocket: Sendable {
    let fd: Int32

    init(fd: Int32) {
        self.fd = fd
    }

    deinit {
        close(fd)
    }

    /// A non-blocking, close-on-exec socket bound to `address` (and listening, for TCP).
    static func bind(_ address: SocketAddress, datagram: Bool) throws(DNSStubError) -> DNSStubSocket {
        let type = Int32(datagram ? SOCK_DGRAM.rawValue : SOCK_STREAM.rawValue)
        let fd = socket(address.family, type | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        guard fd >= 0 else { throw error("socket") }
        let socket = DNSStubSocket(fd: fd)
        var one: Int32 = 1
        if !datagram { setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size)) }
        if address.family == AF_INET6 { setsockopt(fd, Int32(IPPROTO_IPV6), IPV6_V6ONLY, &one, socklen_t(MemoryLayout<Int32>.size)) }
        let bound = address.withSockAddr { Glibc.bind(fd, $0, $1) }
        guard bound == 0 else { throw error("bind \(address)") }
        if !datagram, listen(fd, 128) != 0 { throw error("listen \(address)") }
        return socket
    }

    /// The port the kernel bound (port 0 picks one).
    var localPort: UInt16? { localAddress?.port }

    /// The address and port the socket is bound to.
    var localAddress: SocketAddress? {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let result = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard result == 0 else { return nil }
        return withUnsafePointer(to: &storage) { SocketAddress(storage: UnsafeRawPointer($0)) }
    }

    /// Makes `recv` block, for at most `timeoutMilliseconds` (then EAGAIN), and asks for a receive
    /// buffer of 4 MiB (the kernel caps it at `net.core.rmem_max` unless the process may force it):
    /// the default (about 200 KiB, some 270 queries) overflowed under dnsperf's 1,024 outstanding.
    /// Sends stay non-blocking (`MSG_DONTWAIT`).
    func blockReceives(timeoutMilliseconds: Int32) {
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK)
        var timeout = timeval(tv_sec: Int(timeoutMilliseconds / 1000), tv_usec: Int(timeoutMilliseconds % 1000) * 1000)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var size: Int32 = 4 << 20
        if setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &size, socklen_t(MemoryLayout<Int32>.size)) != 0 {
            setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
    }

    /// Waits up to `milliseconds` for `events`; the events seen, 0 on timeout or EINTR.
    func wait(for events: Int16, milliseconds: Int32) -> Int16 {
        var entry = pollfd(fd: fd, events: events, revents: 0)
        return poll(&entry, 1, milliseconds) > 0 ? entry.revents : 0
    }

    /// Sends a datagram to `peer`; a full socket buffer drops it, as the network may.
    func send(_ bytes: [UInt8], to peer: SocketAddress) {
        _ = bytes.withUnsafeBytes { buffer in
            peer.withSockAddr { sendto(fd, buffer.baseAddress, buffer.count, Int32(MSG_DONTWAIT), $0, $1) }
        }
    }

    static func error(_ what: String, _ code: Int32 = errno) -> DNSStubError {
        DNSStubError(.socket, "\(what): \(String(cString: strerror(code)))")
    }
}
