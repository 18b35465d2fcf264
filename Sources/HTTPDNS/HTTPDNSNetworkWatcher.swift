#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
#if os(Linux) && canImport(CNetlink)
import CNetlink
#endif
import Foundation
import HTTPDNSCore

/// Watches the kernel for network changes and reports each burst of them once.
///
/// Linux only: an rtnetlink socket (`NETLINK_ROUTE`) subscribed to IPv4 and IPv6 address and route
/// changes (`RTMGRP_IPV4_IFADDR`, `RTMGRP_IPV6_IFADDR`, `RTMGRP_IPV4_ROUTE`, `RTMGRP_IPV6_ROUTE`).
/// Every address change counts; of the route changes only default routes do (the rest is churn
/// from interfaces coming and going, which their address events already report). A lost event
/// (the socket's buffer overflowed) counts as a change.
///
/// Events come in bursts — a Wi-Fi association adds an address, a default route and an IPv6
/// address a moment later — so the callback runs once the events have been quiet for the debounce
/// interval. It runs on the watcher's own thread (never Swift's cooperative pool), which blocks in
/// `poll(2)` between events. The engine starts one when ``HTTPDNSConfiguration/Network/watchesChanges``
/// is set; apps on other platforms call ``HTTPDNSEngine/networkDidChange()`` from their reachability
/// callbacks instead.
public final class HTTPDNSNetworkWatcher: Sendable {
    private let shared: Shared

    /// Subscribes and starts the thread; `onChange` runs after each burst of changes.
    ///
    /// - Parameters:
    ///   - debounce: how long the events must be quiet before `onChange` runs. Default 500 ms.
    ///   - onChange: the callback, on the watcher's thread; keep it short.
    /// - Throws: ``HTTPDNSError`` `.transport` when the socket cannot be opened, `.unsupported` on
    ///   platforms other than Linux.
    public init(debounce: Duration = .milliseconds(500), onChange: @escaping @Sendable () -> Void) throws {
        #if os(Linux) && canImport(CNetlink)
        let shared = try Shared.open()
        self.shared = shared
        let interval = debounce.inSeconds
        let thread = Thread {
            shared.run(debounce: interval, onChange: onChange)
        }
        thread.name = "httpdns-netlink"
        thread.start()
        #else
        throw HTTPDNSError(.unsupported, "network watching needs Linux rtnetlink")
        #endif
    }

    deinit {
        stop()
    }

    /// Stops the thread (it exits within moments; a pending change is not reported). Idempotent.
    public func stop() {
        shared.stop()
    }

    /// Whether one datagram read from the rtnetlink socket reports a change that counts (an address
    /// change, or a change of a default route); malformed messages end the walk.
    package static func reportsChange(_ datagram: [UInt8]) -> Bool {
        #if os(Linux) && canImport(CNetlink)
        datagram.withUnsafeBytes { Shared.reportsChange($0) }
        #else
        false
        #endif
    }
}

#if os(Linux) && canImport(CNetlink)
extension HTTPDNSNetworkWatcher {
    /// The descriptors, owned jointly by the watcher and its thread and closed when both are done
    /// with them, so that `stop()` never writes to a descriptor the thread has closed.
    final class Shared: Sendable {
        let socket: Int32
        let wake: Int32

        private init(socket: Int32, wake: Int32) {
            self.socket = socket
            self.wake = wake
        }

        deinit {
            close(socket)
            close(wake)
        }

        static func open() throws -> Shared {
            let fd = Glibc.socket(AF_NETLINK, Int32(SOCK_RAW.rawValue) | Int32(SOCK_CLOEXEC.rawValue), NETLINK_ROUTE)
            guard fd >= 0 else { throw HTTPDNSError(.transport, "netlink socket: \(String(cString: strerror(errno)))") }
            var address = sockaddr_nl()
            address.nl_family = sa_family_t(AF_NETLINK)
            address.nl_groups = UInt32(RTMGRP_IPV4_IFADDR | RTMGRP_IPV6_IFADDR | RTMGRP_IPV4_ROUTE | RTMGRP_IPV6_ROUTE)
            let bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(fd, $0, socklen_t(MemoryLayout<sockaddr_nl>.size))
                }
            }
            guard bound == 0 else {
                let reason = String(cString: strerror(errno))
                close(fd)
                throw HTTPDNSError(.transport, "netlink bind: \(reason)")
            }
            // Room for a large burst (a VPN pushing many routes); an overflow is still reported as a change.
            var size: Int32 = 1 << 20
            _ = setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
            let wake = eventfd(0, Int32(EFD_CLOEXEC))
            guard wake >= 0 else {
                close(fd)
                throw HTTPDNSError(.transport, "eventfd: \(String(cString: strerror(errno)))")
            }
            return Shared(socket: fd, wake: wake)
        }

        func stop() {
            var one: UInt64 = 1
            _ = write(wake, &one, MemoryLayout<UInt64>.size)
        }

        /// The thread's loop: poll, drain, debounce, report; returns when woken by ``stop()``.
        func run(debounce: Double, onChange: @Sendable () -> Void) {
            var deadline: Double?
            var buffer = [UInt8](repeating: 0, count: 32 * 1024)
            while true {
                var fds = [pollfd(fd: socket, events: Int16(POLLIN), revents: 0), pollfd(fd: wake, events: Int16(POLLIN), revents: 0)]
                let timeout = deadline.map { Int32(max(0, ($0 - Shared.now()) * 1000).rounded(.up)) } ?? -1
                let ready = poll(&fds, 2, timeout)
                if ready < 0, errno != EINTR { return }
                if fds[1].revents != 0 { return }
                let events = fds[0].revents
                // POLLERR too: an overflow (lost events) is reported as a socket error that recv returns.
                if events & Int16(POLLIN | POLLERR) != 0 {
                    if drain(&buffer) { deadline = Shared.now() + debounce }
                } else if events & Int16(POLLHUP | POLLNVAL) != 0 {
                    return
                }
                if let due = deadline, Shared.now() >= due {
                    deadline = nil
                    onChange()
                }
            }
        }

        /// Reads every queued datagram; whether any of them reported a change that counts.
        private func drain(_ buffer: inout [UInt8]) -> Bool {
            var relevant = false
            while true {
                let count = buffer.withUnsafeMutableBytes { recv(socket, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
                if count < 0 {
                    if errno == ENOBUFS { relevant = true; continue }  // events were lost: assume a change
                    if errno == EINTR { continue }
                    return relevant
                }
                if count == 0 { return relevant }
                relevant = buffer.withUnsafeBytes { Shared.reportsChange(UnsafeRawBufferPointer(rebasing: $0[..<count])) } || relevant
            }
        }

        /// Whether a datagram of netlink messages holds an address change or a default-route change.
        /// Every length is checked against the datagram: a malformed message ends the walk.
        static func reportsChange(_ datagram: UnsafeRawBufferPointer) -> Bool {
            let headerSize = MemoryLayout<nlmsghdr>.size
            let payloadOffset = Int(cnetlink_header_length())
            var offset = 0
            var relevant = false
            while offset + headerSize <= datagram.count {
                let header = datagram.loadUnaligned(fromByteOffset: offset, as: nlmsghdr.self)
                let length = Int(header.nlmsg_len)
                guard length >= headerSize, offset + length <= datagram.count else { break }
                switch Int32(header.nlmsg_type) {
                case Int32(RTM_NEWADDR), Int32(RTM_DELADDR):
                    relevant = true
                case Int32(RTM_NEWROUTE), Int32(RTM_DELROUTE):
                    guard length >= payloadOffset + MemoryLayout<rtmsg>.size else { break }
                    let route = datagram.loadUnaligned(fromByteOffset: offset + payloadOffset, as: rtmsg.self)
                    if route.rtm_dst_len == 0, route.rtm_table != UInt8(RT_TABLE_LOCAL.rawValue) { relevant = true }
                default:
                    break
                }
                offset += Int(cnetlink_align(UInt32(length)))
            }
            return relevant
        }

        private static func now() -> Double {
            var spec = timespec()
            clock_gettime(CLOCK_MONOTONIC, &spec)
            return Double(spec.tv_sec) + Double(spec.tv_nsec) / 1e9
        }
    }
}
#else
extension HTTPDNSNetworkWatcher {
    final class Shared: Sendable {
        func stop() {}
    }
}
#endif
