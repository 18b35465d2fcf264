import Foundation
import HTTPDNSCore
#if canImport(Glibc)
import Glibc
#endif

/// The `tcp` check's probe: a non-blocking connect to the address, watched by one thread of its
/// own with `poll` among every probe in flight, and closed as soon as it is up.
///
/// A connect is all a `tcp` check asks; going through libcurl (a transfer, its handle and its
/// event-loop round trips) cost about 400 µs of CPU per probe, so 1,000 checked addresses every 5 s
/// took 8 % of a core from the queries (bench row 10). This costs a few system calls. Nothing
/// blocks the cooperative pool: callers wait on a continuation the poll thread resumes.
package final class HTTPDNSTCPConnectProber: @unchecked Sendable {
    /// A connect in progress.
    private struct Pending {
        var fd: Int32
        var deadline: ContinuousClock.Instant
        var continuation: CheckedContinuation<String?, Never>
    }

    private let state = HTTPDNSLock<(pending: [Pending], stopped: Bool)>(([], false))
    /// Wakes the poll thread when a probe is added or the prober stops.
    private let wake: (read: Int32, write: Int32)
    private let done = DispatchSemaphore(value: 0)

    package init() {
        var fds: [Int32] = [-1, -1]
        if pipe(&fds) == 0 {
            for fd in fds {
                _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL, 0) | O_NONBLOCK)
                _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            }
        }
        wake = (fds[0], fds[1])
        let thread = Thread { [self] in self.loop() }
        thread.name = "httpdns-tcp-probes"
        thread.start()
    }

    deinit {
        if wake.read >= 0 { close(wake.read) }
        if wake.write >= 0 { close(wake.write) }
    }

    /// A connect begun by ``begin(address:port:)``.
    package enum Attempt: Sendable {
        /// The outcome is known already: nil connected, else why not.
        case finished(String?)
        /// Still connecting: ``wait(_:timeout:)`` for it.
        case connecting(Int32)
    }

    /// Connects to `address`:`port` within `timeout`; nil when the connection was made, else why
    /// not (`Connection refused`, `timed out`, …).
    package func connect(to address: HTTPDNSIPAddress, port: Int, timeout: Duration) async -> String? {
        switch Self.begin(address: address, port: port) {
        case .finished(let outcome): return outcome
        case .connecting(let fd): return await wait(fd, timeout: timeout)
        }
    }

    /// Starts a connect to `address`:`port` without waiting: on loopback the answer (a SYN-ACK or a
    /// reset) is often in before the call returns, and then no task or thread is involved at all.
    package static func begin(address: HTTPDNSIPAddress, port: Int) -> Attempt {
        let (fd, immediate) = start(address: address, port: port)
        guard let fd else { return .finished(immediate ?? "cannot connect") }
        // Reading SO_ERROR consumes the answer, so an outcome seen here is the outcome.
        if let outcome = connected(fd) {
            close(fd)
            return .finished(outcome)
        }
        return .connecting(fd)
    }

    /// Waits up to `timeout` for the connect of `fd` (from ``begin(address:port:)``) on the poll
    /// thread, and closes `fd`; nil when the connection was made, else why not.
    package func wait(_ fd: Int32, timeout: Duration) async -> String? {
        await withCheckedContinuation { continuation in
            let added = state.withLock { state -> Bool in
                guard !state.stopped else { return false }
                state.pending.append(Pending(fd: fd, deadline: .now + timeout, continuation: continuation))
                return true
            }
            guard added else {
                close(fd)
                continuation.resume(returning: "the prober has stopped")
                return
            }
            var byte: UInt8 = 1
            _ = write(wake.write, &byte, 1)
        }
    }

    /// Ends the poll thread; probes in flight end as failed.
    package func stop() {
        let first = state.withLock { state -> Bool in
            defer { state.stopped = true }
            return !state.stopped
        }
        guard first else { return }
        var byte: UInt8 = 1
        _ = write(wake.write, &byte, 1)
        done.wait()
    }

    private func loop() {
        while true {
            let (pending, stopped) = state.withLock { ($0.pending, $0.stopped) }
            if stopped {
                let left = state.withLock { state -> [Pending] in
                    defer { state.pending = [] }
                    return state.pending
                }
                for probe in left {
                    close(probe.fd)
                    probe.continuation.resume(returning: "the prober has stopped")
                }
                done.signal()
                return
            }
            var polled = [pollfd(fd: wake.read, events: Int16(POLLIN), revents: 0)]
            polled += pending.map { pollfd(fd: $0.fd, events: Int16(POLLOUT), revents: 0) }
            let now = ContinuousClock.now
            let nearest = pending.map(\.deadline).min()
            let wait = nearest.map { max(0, Self.milliseconds($0 - now)) } ?? -1
            _ = poll(&polled, nfds_t(polled.count), Int32(clamping: wait))
            if polled[0].revents != 0 {
                var drain = [UInt8](repeating: 0, count: 64)
                while read(wake.read, &drain, drain.count) > 0 {}
            }
            let after = ContinuousClock.now
            var finished: [(Pending, String?)] = []
            var ready: [Int32: Int16] = [:]
            for entry in polled.dropFirst() where entry.revents != 0 { ready[entry.fd] = entry.revents }
            state.withLock { state in
                state.pending.removeAll { probe in
                    if let events = ready[probe.fd] {
                        if let outcome = Self.connected(probe.fd) {
                            finished.append((probe, outcome))
                            return true
                        }
                        // An error or hang-up the socket no longer names: failed all the same.
                        if events & Int16(POLLERR | POLLHUP) != 0 {
                            finished.append((probe, "connection failed"))
                            return true
                        }
                    }
                    if probe.deadline <= after {
                        finished.append((probe, "timed out"))
                        return true
                    }
                    return false
                }
            }
            for (probe, error) in finished {
                close(probe.fd)
                probe.continuation.resume(returning: error)
            }
        }
    }

    /// A non-blocking socket connecting to `address`:`port`: the descriptor, and an error when the
    /// connect failed at once (then no descriptor is left open).
    private static func start(address: HTTPDNSIPAddress, port: Int) -> (Int32?, String?) {
        guard (1...65_535).contains(port) else { return (nil, "port \(port) out of range") }
        let family = address.family == .v4 ? AF_INET : AF_INET6
        let fd = socket(family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return (nil, String(cString: strerror(errno))) }
        var storage = sockaddr_storage()
        let length: socklen_t
        let bytes = address.bytes
        if address.family == .v4 {
            var v4 = sockaddr_in()
            v4.sin_family = sa_family_t(AF_INET)
            v4.sin_port = UInt16(port).bigEndian
            withUnsafeMutableBytes(of: &v4.sin_addr) { $0.copyBytes(from: bytes) }
            withUnsafeBytes(of: &v4) { source in withUnsafeMutableBytes(of: &storage) { $0.copyMemory(from: source) } }
            length = socklen_t(MemoryLayout<sockaddr_in>.size)
        } else {
            var v6 = sockaddr_in6()
            v6.sin6_family = sa_family_t(AF_INET6)
            v6.sin6_port = UInt16(port).bigEndian
            withUnsafeMutableBytes(of: &v6.sin6_addr) { $0.copyBytes(from: bytes) }
            withUnsafeBytes(of: &v6) { source in withUnsafeMutableBytes(of: &storage) { $0.copyMemory(from: source) } }
            length = socklen_t(MemoryLayout<sockaddr_in6>.size)
        }
        let result = withUnsafePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, length) }
        }
        if result == 0 || errno == EINPROGRESS { return (fd, nil) }
        let error = String(cString: strerror(errno))
        close(fd)
        return (nil, error)
    }

    /// Whether the connect of `fd` ended: `.some(nil)` connected, `.some(error)` failed, `nil`
    /// still in progress.
    private static func connected(_ fd: Int32) -> String?? {
        var error: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        guard getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) == 0 else { return .some(String(cString: strerror(errno))) }
        if error != 0 { return .some(String(cString: strerror(error))) }
        // No error yet: connected when the peer address is known.
        var peer = sockaddr_storage()
        var peerLength = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let named = withUnsafeMutablePointer(to: &peer) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getpeername(fd, $0, &peerLength) }
        }
        return named == 0 ? .some(nil) : nil
    }

    private static func milliseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        return seconds * 1_000 + (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000
    }
}
