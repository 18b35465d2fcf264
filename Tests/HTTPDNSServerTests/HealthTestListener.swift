import Foundation
import Glibc
import HTTPDNSCore

/// A loopback origin of the health tests' own: TCP listeners on chosen loopback addresses and one
/// port, served by one poll thread, counting the connections open at once. It answers every
/// connection either not at all (held until the peer closes: enough for `tcp` checks) or, in
/// `http` mode, with a fixed status after a delay, then closes it (its count ends at that close,
/// before the client can have finished: the peak never over-counts the client's connections).
/// ``stop()`` closes every socket, so that probes are refused; ``start()`` binds the same port again.
final class HealthTestListener: @unchecked Sendable {
    enum Mode {
        case hold
        case http(status: Int, delay: Duration)
    }

    let addresses: [HTTPDNSIPAddress]
    private(set) var port: Int = 0
    private let lock = NSLock()
    private var mode: Mode
    private var open = 0
    private var peakOpen = 0
    private var accepted = 0
    private var thread: Thread?
    private var wake: (Int32, Int32) = (-1, -1)
    private var running = false

    init(addresses: [String] = ["127.0.0.1"], port: Int = 0, mode: Mode = .hold) throws {
        self.addresses = try addresses.map { text in
            guard let address = HTTPDNSIPAddress(text) else { throw Failure("bad address \(text)") }
            return address
        }
        self.mode = mode
        self.port = port
        try start()
    }

    deinit { stop() }

    struct Failure: Error, CustomStringConvertible {
        var description: String
        init(_ description: String) { self.description = description }
    }

    var peak: Int { lock.withLock { peakOpen } }
    var acceptedCount: Int { lock.withLock { accepted } }
    func setMode(_ mode: Mode) { lock.withLock { self.mode = mode } }

    /// Binds every address on ``port`` (the first bind picks it when 0) and starts serving.
    func start() throws {
        var listeners: [Int32] = []
        for address in addresses {
            let fd = socket(address.family == .v4 ? AF_INET : AF_INET6, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
            guard fd >= 0 else { throw Failure("socket: errno \(errno)") }
            var one: Int32 = 1
            setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
            guard bindTo(fd, address), listen(fd, 1024) == 0 else {
                let code = errno
                close(fd)
                listeners.forEach { close($0) }
                throw Failure("bind/listen \(address):\(port): errno \(code)")
            }
            if port == 0 { port = Self.boundPort(fd) }
            listeners.append(fd)
        }
        var pipeFDs: [Int32] = [0, 0]
        guard pipe(&pipeFDs) == 0 else { throw Failure("pipe") }
        wake = (pipeFDs[0], pipeFDs[1])
        running = true
        let wakeRead = pipeFDs[0]
        let bound = listeners
        let thread = Thread { [self] in serve(bound, wake: wakeRead) }
        self.thread = thread
        thread.start()
    }

    /// Closes every socket (the listeners and the connections); waits until the thread is done.
    func stop() {
        guard running else { return }
        running = false
        var byte: UInt8 = 1
        _ = write(wake.1, &byte, 1)
        while thread?.isFinished == false { usleep(1_000) }
        close(wake.0)
        close(wake.1)
        thread = nil
    }

    private func bindTo(_ fd: Int32, _ address: HTTPDNSIPAddress) -> Bool {
        if address.family == .v4 {
            var storage = sockaddr_in()
            storage.sin_family = sa_family_t(AF_INET)
            storage.sin_port = in_port_t(UInt16(port).bigEndian)
            withUnsafeMutableBytes(of: &storage.sin_addr) { $0.copyBytes(from: address.bytes) }
            return withUnsafePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
            }
        }
        var storage = sockaddr_in6()
        storage.sin6_family = sa_family_t(AF_INET6)
        storage.sin6_port = in_port_t(UInt16(port).bigEndian)
        withUnsafeMutableBytes(of: &storage.sin6_addr) { $0.copyBytes(from: address.bytes) }
        return withUnsafePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size)) == 0 }
        }
    }

    private static func boundPort(_ fd: Int32) -> Int {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        _ = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return withUnsafeBytes(of: &storage) { Int(UInt16($0[2]) << 8 | UInt16($0[3])) }
    }

    private func serve(_ listeners: [Int32], wake: Int32) {
        var connections: [Int32: ContinuousClock.Instant] = [:]
        func drop(_ fd: Int32) {
            close(fd)
            connections[fd] = nil
            lock.withLock { open -= 1 }
        }
        loop: while true {
            let mode = lock.withLock { self.mode }
            let now = ContinuousClock.now
            // Answer connections whose delay is over (http mode), then close them.
            if case .http(let status, let delay) = mode {
                for (fd, since) in connections where now - since >= delay {
                    let reply = "HTTP/1.1 \(status) Test\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                    _ = reply.withCString { send(fd, $0, strlen($0), Int32(MSG_NOSIGNAL)) }
                    drop(fd)
                }
            }
            var fds = [pollfd(fd: wake, events: Int16(POLLIN), revents: 0)]
            fds += connections.keys.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
            let firstListener = fds.count
            fds += listeners.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
            var timeout: Int32 = 100
            if case .http(_, let delay) = mode, let oldest = connections.values.min() {
                let left = delay - (now - oldest)
                timeout = max(1, min(100, Int32(left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000) + 1))
            }
            guard poll(&fds, nfds_t(fds.count), timeout) >= 0 || errno == EINTR else { break }
            if fds[0].revents != 0 { break loop }
            // Ends first, accepts after: a client's close seen in this round is counted before its
            // next connection.
            var buffer = [UInt8](repeating: 0, count: 4096)
            for index in 1..<firstListener where fds[index].revents != 0 {
                let count = recv(fds[index].fd, &buffer, buffer.count, 0)
                if count <= 0 { drop(fds[index].fd) }
            }
            for index in firstListener..<fds.count where fds[index].revents != 0 {
                while true {
                    let fd = accept(fds[index].fd, nil, nil)
                    guard fd >= 0 else { break }
                    _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
                    connections[fd] = ContinuousClock.now
                    lock.withLock {
                        open += 1
                        accepted += 1
                        peakOpen = max(peakOpen, open)
                    }
                }
            }
        }
        for fd in connections.keys { drop(fd) }
        listeners.forEach { close($0) }
    }
}
