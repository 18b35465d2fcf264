#if canImport(Glibc)
import Glibc
#endif
import DNSSockets
import DNSWire
import Foundation
import HTTPDNSCore

/// Takes NOTIFY messages (RFC 1996) from primaries over UDP and TCP on one port of its own (Knot
/// sends them over TCP, BIND over UDP), answers each as ``HTTPDNSNotifyPolicy`` decides, and hands
/// the zones to check to `onNotify`. One thread, one message at a time (a NOTIFY is a few hundred
/// bytes and its work a lookup and an HMAC); a TCP connection gets 2 s to deliver its message and
/// is closed after the answer. Refusals are logged at most once a second, so a flood from a
/// stranger cannot fill the log.
package final class HTTPDNSNotifyListener: Sendable {
    /// The bound address and port (port 0 in the request picks one).
    package let address: SocketAddress
    private let fd: Int32
    private let tcp: Int32
    private let wake: (read: Int32, write: Int32)
    private let stopped = DispatchSemaphore(value: 0)
    private let running = HTTPDNSLock(true)

    /// Binds `address` (UDP and TCP, one port) and starts answering.
    ///
    /// - Throws: ``HTTPDNSFleetError`` `.invalidConfiguration` when the address cannot be bound.
    package init(
        address: SocketAddress, policy: HTTPDNSNotifyPolicy, onNotify: @escaping @Sendable (DNSName) -> Void,
        onRefusal: @escaping @Sendable (String) -> Void
    ) throws(HTTPDNSFleetError) {
        let (fd, tcp, bound) = try Self.bindSockets(address)
        self.address = bound
        var pipeFDs: [Int32] = [-1, -1]
        guard pipe(&pipeFDs) == 0 else {
            close(tcp)
            close(fd)
            throw HTTPDNSFleetError(.invalidConfiguration, "notify listener: pipe: \(String(cString: strerror(errno)))")
        }
        for descriptor in pipeFDs {
            _ = fcntl(descriptor, F_SETFL, fcntl(descriptor, F_GETFL, 0) | O_NONBLOCK)
            _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC)
        }
        self.fd = fd
        self.tcp = tcp
        wake = (pipeFDs[0], pipeFDs[1])
        let thread = Thread { [fd, tcp, wake, stopped, running] in
            Self.serve(fd: fd, tcp: tcp, wake: wake.read, policy: policy, onNotify: onNotify, onRefusal: onRefusal, running: running)
            stopped.signal()
        }
        thread.name = "httpdns notify"
        thread.start()
    }

    /// Binds a UDP socket and a listening TCP socket to `address`, both on the same port.
    ///
    /// With port 0 the kernel picks the UDP port, and that number may already be taken for TCP (a
    /// listener, or the local end of a connection: the two protocols' ports are separate
    /// namespaces): then another UDP port is tried, up to `attempts` times in all. A test suite
    /// starting `--notify-listen 127.0.0.1:0` next to busy TCP traffic met EADDRINUSE this way.
    ///
    /// - Returns: the descriptors (close-on-exec) and the address bound.
    static func bindSockets(_ address: SocketAddress, attempts: Int = 16) throws(HTTPDNSFleetError) -> (udp: Int32, tcp: Int32, bound: SocketAddress) {
        let family = address.address.family == .v4 ? AF_INET : AF_INET6
        var attempt = 0
        while true {
            attempt += 1
            let fd = socket(family, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            guard fd >= 0 else { throw HTTPDNSFleetError(.invalidConfiguration, "notify listener: socket: \(String(cString: strerror(errno)))") }
            guard address.withSockAddr({ bind(fd, $0, $1) }) == 0 else {
                let reason = String(cString: strerror(errno))
                close(fd)
                throw HTTPDNSFleetError(.invalidConfiguration, "cannot listen for NOTIFY on \(address): \(reason)")
            }
            var storage = sockaddr_storage()
            var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
            _ = withUnsafeMutablePointer(to: &storage) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
            let bound = withUnsafeBytes(of: &storage) { SocketAddress(storage: $0.baseAddress!) } ?? address
            let tcp = socket(family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            var one: Int32 = 1
            if tcp >= 0 { setsockopt(tcp, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size)) }
            if tcp >= 0, bound.withSockAddr({ bind(tcp, $0, $1) }) == 0, listen(tcp, 16) == 0 { return (fd, tcp, bound) }
            let code = errno
            if tcp >= 0 { close(tcp) }
            close(fd)
            guard code == EADDRINUSE, address.port == 0, attempt < attempts else {
                throw HTTPDNSFleetError(.invalidConfiguration, "cannot listen for NOTIFY over TCP on \(bound): \(String(cString: strerror(code)))")
            }
        }
    }

    deinit {
        stop()
        close(fd)
        close(tcp)
        close(wake.read)
        close(wake.write)
    }

    /// Stops answering and waits for the thread. Safe to call twice.
    package func stop() {
        let first = running.withLock { running -> Bool in
            defer { running = false }
            return running
        }
        guard first else { return }
        var byte: UInt8 = 1
        _ = write(wake.write, &byte, 1)
        stopped.wait()
    }

    private static func serve(
        fd: Int32, tcp: Int32, wake: Int32, policy: HTTPDNSNotifyPolicy, onNotify: @Sendable (DNSName) -> Void,
        onRefusal: @Sendable (String) -> Void, running: HTTPDNSLock<Bool>
    ) {
        var buffer = [UInt8](repeating: 0, count: 4_096)
        var lastLog = ContinuousClock.now - .seconds(2)
        func handle(_ message: [UInt8], from source: SocketAddress) -> [UInt8]? {
            let now = UInt64(max(0, Date().timeIntervalSince1970))
            let outcome = policy.handle(message, from: source.address, now: now)
            if let zone = outcome.zone { onNotify(zone) }
            if let refusal = outcome.refusal, ContinuousClock.now - lastLog >= .seconds(1) {
                lastLog = ContinuousClock.now
                onRefusal("\(refusal)")
            }
            return outcome.answer
        }
        while running.withLock({ $0 }) {
            var polled = [
                pollfd(fd: fd, events: Int16(POLLIN), revents: 0), pollfd(fd: tcp, events: Int16(POLLIN), revents: 0),
                pollfd(fd: wake, events: Int16(POLLIN), revents: 0),
            ]
            guard poll(&polled, 3, -1) > 0 else { continue }
            if polled[1].revents & Int16(POLLIN) != 0 { serveConnection(tcp, handle) }
            guard polled[0].revents & Int16(POLLIN) != 0 else { continue }
            var storage = sockaddr_storage()
            var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
            let count = buffer.withUnsafeMutableBytes { raw in
                withUnsafeMutablePointer(to: &storage) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { recvfrom(fd, raw.baseAddress, raw.count, Int32(MSG_DONTWAIT), $0, &length) }
                }
            }
            guard count > 0, let source = withUnsafeBytes(of: &storage, { SocketAddress(storage: $0.baseAddress!) }) else { continue }
            if let answer = handle(Array(buffer[0..<count]), from: source) {
                _ = answer.withUnsafeBytes { raw in
                    withUnsafePointer(to: &storage) {
                        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { sendto(fd, raw.baseAddress, raw.count, Int32(MSG_DONTWAIT), $0, length) }
                    }
                }
            }
        }
    }

    /// One TCP connection: one framed message (RFC 1035 §4.2.2) within 2 s, its answer, then close.
    private static func serveConnection(_ listener: Int32, _ handle: ([UInt8], SocketAddress) -> [UInt8]?) {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let connection = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { accept(listener, $0, &length) }
        }
        guard connection >= 0 else { return }
        _ = fcntl(connection, F_SETFL, fcntl(connection, F_GETFL, 0) | O_NONBLOCK)
        _ = fcntl(connection, F_SETFD, FD_CLOEXEC)
        defer { close(connection) }
        guard let source = withUnsafeBytes(of: &storage, { SocketAddress(storage: $0.baseAddress!) }) else { return }
        let deadline = ContinuousClock.now + .seconds(2)
        var received: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4_096)
        while true {
            if received.count >= 2 {
                let size = Int(received[0]) << 8 | Int(received[1])
                if received.count >= 2 + size {
                    guard let answer = handle(Array(received[2..<(2 + size)]), source) else { return }
                    let framed = [UInt8(answer.count >> 8), UInt8(answer.count & 0xff)] + answer
                    var written = 0
                    while written < framed.count, ContinuousClock.now < deadline {
                        let count = framed[written...].withUnsafeBytes { send(connection, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                        if count > 0 { written += count; continue }
                        var entry = pollfd(fd: connection, events: Int16(POLLOUT), revents: 0)
                        _ = poll(&entry, 1, 50)
                    }
                    return
                }
            }
            let left = deadline - .now
            guard left > .zero, received.count <= 2 + 65_535 else { return }
            var entry = pollfd(fd: connection, events: Int16(POLLIN), revents: 0)
            guard poll(&entry, 1, Int32(min(2_000, max(1, left.components.seconds * 1_000 + left.components.attoseconds / 1_000_000_000_000_000)))) > 0 else { continue }
            let count = chunk.withUnsafeMutableBytes { recv(connection, $0.baseAddress, $0.count, 0) }
            guard count > 0 else { return }
            received += chunk[0..<count]
        }
    }
}
