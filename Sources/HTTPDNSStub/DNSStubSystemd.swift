#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import DNSSockets
import Foundation
import HTTPDNSCore

/// systemd's two protocols, without libsystemd: socket activation (sd_listen_fds(3): the sockets
/// arrive as descriptors 3… with `LISTEN_FDS` and `LISTEN_PID` set) and readiness notification
/// (sd_notify(3): a datagram such as `READY=1` to the unix socket `$NOTIFY_SOCKET`).
package enum DNSStubSystemd {
    /// The first passed descriptor (`SD_LISTEN_FDS_START`).
    static let firstDescriptor: Int32 = 3

    /// The sockets systemd passed to this process: one UDP and one TCP listener, both needed (DNS
    /// over UDP needs TCP for truncated answers, RFC 7766 §5). Nil when none was passed to this
    /// process (`LISTEN_PID` is another's or unset). The variables are removed from the
    /// environment, as `sd_listen_fds(1)` does, so that no child takes them for its own.
    ///
    /// - Throws: ``DNSStubError`` `.socketActivation` when the descriptors are not exactly one
    ///   UDP socket and one listening TCP socket (checked with `getsockopt`: `SO_TYPE`, `SO_DOMAIN`
    ///   IPv4 or IPv6, `SO_ACCEPTCONN`).
    package static func activatedSockets(
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws(DNSStubError) -> (udp: Int32, tcp: Int32)? {
        guard let pid = environment["LISTEN_PID"].flatMap({ Int32($0) }), pid == getpid(),
              let count = environment["LISTEN_FDS"].flatMap({ Int32($0) }), count > 0
        else { return nil }
        unsetenv("LISTEN_PID")
        unsetenv("LISTEN_FDS")
        unsetenv("LISTEN_FDNAMES")
        var udp: Int32?
        var tcp: Int32?
        func option(_ fd: Int32, _ name: Int32) -> Int32? {
            var value: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            return getsockopt(fd, SOL_SOCKET, name, &value, &length) == 0 ? value : nil
        }
        for fd in firstDescriptor..<(firstDescriptor + count) {
            guard let type = option(fd, SO_TYPE), let domain = option(fd, SO_DOMAIN) else {
                throw DNSStubError(.socketActivation, "passed descriptor \(fd) is not a socket")
            }
            guard domain == AF_INET || domain == AF_INET6 else {
                throw DNSStubError(.socketActivation, "passed descriptor \(fd) is not an IPv4 or IPv6 socket")
            }
            if type == Int32(SOCK_STREAM.rawValue), option(fd, SO_ACCEPTCONN) != 1 {
                throw DNSStubError(.socketActivation, "passed stream socket \(fd) is not listening (Accept=no, ListenStream=)")
            }
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            if type == Int32(SOCK_DGRAM.rawValue), udp == nil {
                udp = fd
            } else if type == Int32(SOCK_STREAM.rawValue), tcp == nil {
                tcp = fd
            } else {
                throw DNSStubError(.socketActivation, "passed descriptor \(fd) is an unexpected socket (type \(type))")
            }
        }
        guard let udp, let tcp else {
            throw DNSStubError(
                .socketActivation, "socket activation needs one datagram and one stream socket (ListenDatagram= and ListenStream=)")
        }
        return (udp, tcp)
    }

    /// Sends `state` (for example `READY=1`, `STOPPING=1`) to `$NOTIFY_SOCKET` if set; a leading
    /// `@` names an abstract socket. Best effort, as sd_notify(3): returns whether it was sent.
    @discardableResult
    package static func notify(_ state: String, environment: [String: String] = ProcessInfo.processInfo.environment) -> Bool {
        guard let path = environment["NOTIFY_SOCKET"], path.hasPrefix("/") || path.hasPrefix("@") else { return false }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        var pathBytes = Array(path.utf8)
        if pathBytes.first == UInt8(ascii: "@") { pathBytes[0] = 0 }
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard pathBytes.count < capacity else { return false }
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            for (index, byte) in pathBytes.enumerated() { buffer[index] = byte }
        }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + pathBytes.count + (pathBytes.first == 0 ? 0 : 1))
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        let message = Array(state.utf8)
        let sent = message.withUnsafeBytes { bytes in
            withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { sendto(fd, bytes.baseAddress, bytes.count, 0, $0, length) }
            }
        }
        return sent == message.count
    }
}
