#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import HTTPDNSCore

/// An IP address and port in the `sockaddr` forms the socket calls take (shared with the proxy).
package struct SocketAddress: Hashable, Sendable, CustomStringConvertible {
    package var address: HTTPDNSIPAddress
    package var port: UInt16

    package var description: String { "\(address.uriText):\(port)" }

    package var family: Int32 { address.family == .v4 ? AF_INET : AF_INET6 }

    /// Calls `body` with a `sockaddr` pointer and its length.
    package func withSockAddr<Result>(_ body: (UnsafePointer<sockaddr>, socklen_t) throws -> Result) rethrows -> Result {
        let bytes = address.bytes
        if address.family == .v4 {
            var storage = sockaddr_in()
            storage.sin_family = sa_family_t(AF_INET)
            storage.sin_port = port.bigEndian
            withUnsafeMutableBytes(of: &storage.sin_addr) { $0.copyBytes(from: bytes) }
            return try withUnsafePointer(to: &storage) {
                try $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    try body($0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
        }
        var storage = sockaddr_in6()
        storage.sin6_family = sa_family_t(AF_INET6)
        storage.sin6_port = port.bigEndian
        withUnsafeMutableBytes(of: &storage.sin6_addr) { $0.copyBytes(from: bytes) }
        return try withUnsafePointer(to: &storage) {
            try $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                try body($0, socklen_t(MemoryLayout<sockaddr_in6>.size))
            }
        }
    }

    /// Reads an address filled in by `recvfrom`, `getsockname` or `getaddrinfo`.
    package init?(storage: UnsafeRawPointer) {
        let family = Int32(storage.load(as: sockaddr.self).sa_family)
        if family == AF_INET {
            let value = storage.loadUnaligned(as: sockaddr_in.self)
            guard let address = withUnsafeBytes(of: value.sin_addr, { HTTPDNSIPAddress(bytes: Array($0)) }) else { return nil }
            self.init(address: address, port: UInt16(bigEndian: value.sin_port))
        } else if family == AF_INET6 {
            let value = storage.loadUnaligned(as: sockaddr_in6.self)
            guard let address = withUnsafeBytes(of: value.sin6_addr, { HTTPDNSIPAddress(bytes: Array($0)) }) else { return nil }
            self.init(address: address, port: UInt16(bigEndian: value.sin6_port))
        } else {
            return nil
        }
    }

    package init(address: HTTPDNSIPAddress, port: UInt16) {
        self.address = address
        self.port = port
    }
}

/// Thin wrappers over the socket calls with `errno` turned into `HTTPDNSError`.
enum PosixSocket {
    #if os(Linux)
    static let datagram = Int32(SOCK_DGRAM.rawValue)
    static let stream = Int32(SOCK_STREAM.rawValue)
    static let closeOnExec = Int32(SOCK_CLOEXEC.rawValue)
    static let noSignal = Int32(MSG_NOSIGNAL)
    #else
    static let datagram = SOCK_DGRAM
    static let stream = SOCK_STREAM
    static let closeOnExec: Int32 = 0
    static let noSignal: Int32 = 0
    #endif

    static func error(_ what: String, _ code: Int32 = errno) -> HTTPDNSError {
        HTTPDNSError(.transport, "\(what): \(String(cString: strerror(code)))")
    }

    /// A non-blocking socket of `type` for `family`.
    static func open(family: Int32, type: Int32) throws(HTTPDNSError) -> Int32 {
        let fd = socket(family, type | closeOnExec, 0)
        guard fd >= 0 else { throw error("socket") }
        let flags = fcntl(fd, F_GETFL, 0)
        guard flags >= 0, fcntl(fd, F_SETFL, flags | O_NONBLOCK) == 0 else {
            let failure = error("fcntl")
            close(fd)
            throw failure
        }
        return fd
    }

    /// Waits for `events` on `fd` for at most `milliseconds`; returns the events seen (0 on timeout).
    static func wait(_ fd: Int32, for events: Int16, milliseconds: Int32) throws(HTTPDNSError) -> Int16 {
        var entry = pollfd(fd: fd, events: events, revents: 0)
        let result = poll(&entry, 1, milliseconds)
        if result < 0 {
            if errno == EINTR { return 0 }
            throw error("poll")
        }
        return result == 0 ? 0 : entry.revents
    }
}
