import Foundation
import HTTPDNSCore

/// Listening sockets, made here rather than in h2o so that errors name their cause.
enum HTTPServerSocket {
    /// Binds and listens; returns the descriptor (non-blocking) and the bound port.
    ///
    /// - Throws: a ``HTTPServer/StartError`` with the address and the errno text, for example
    ///   `cannot listen on 127.0.0.1:8053: Address already in use (EADDRINUSE)`.
    static func listen(_ listener: HTTPServer.Listener, reusePort: Bool) throws(HTTPServer.StartError) -> (fd: Int32, port: Int) {
        let name = "\(listener.address.uriText):\(listener.port)"
        guard (0...65_535).contains(listener.port) else { throw HTTPServer.StartError("port out of range in \(name)") }
        let v6 = listener.address.family == .v6
        // A QUIC listener is a UDP socket (bound, nothing to listen for).
        let kind = listener.isQUIC ? Int32(SOCK_DGRAM.rawValue) : Int32(SOCK_STREAM.rawValue)
        let type = kind | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        let fd = socket(v6 ? AF_INET6 : AF_INET, type, 0)
        guard fd >= 0 else { throw failure("cannot listen on \(name)", errno) }
        var on: Int32 = 1
        // Not on UDP: there SO_REUSEADDR lets a second socket bind the same port unnoticed.
        if !listener.isQUIC { setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, socklen_t(MemoryLayout<Int32>.size)) }
        if reusePort { setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &on, socklen_t(MemoryLayout<Int32>.size)) }
        if v6 { setsockopt(fd, Int32(IPPROTO_IPV6), IPV6_V6ONLY, &on, socklen_t(MemoryLayout<Int32>.size)) }
        let bound = withSocketAddress(listener.address, port: listener.port) { address, length in
            bind(fd, address, length)
        }
        // The kernel caps the backlog at net.core.somaxconn (4096 on current kernels).
        guard bound == 0, listener.isQUIC || Glibc.listen(fd, 4096) == 0 else {
            let code = errno
            close(fd)
            throw failure("cannot listen on \(name)", code)
        }
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let port = withUnsafeMutablePointer(to: &storage) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address -> Int in
                guard getsockname(fd, address, &length) == 0 else { return listener.port }
                return HTTPServerCore.peer(address).1
            }
        }
        return (fd, port)
    }

    /// `what: strerror (ENAME)`.
    static func failure(_ what: String, _ code: Int32) -> HTTPServer.StartError {
        let names: [Int32: String] = [
            EADDRINUSE: "EADDRINUSE", EACCES: "EACCES", EADDRNOTAVAIL: "EADDRNOTAVAIL", EMFILE: "EMFILE",
            EAFNOSUPPORT: "EAFNOSUPPORT", EINVAL: "EINVAL", EPERM: "EPERM",
        ]
        let text = String(cString: strerror(code))
        return HTTPServer.StartError("\(what): \(text)" + (names[code].map { " (\($0))" } ?? ""))
    }

    /// Raises this process's descriptor limit to its hard limit, once: each connection is one.
    static func raiseDescriptorLimit() {
        _ = raised
    }

    private static let raised: Bool = {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0, limit.rlim_cur < limit.rlim_max else { return false }
        limit.rlim_cur = limit.rlim_max
        return setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0
    }()

    static func withSocketAddress<T>(
        _ address: HTTPDNSIPAddress, port: Int, _ body: (UnsafePointer<sockaddr>, socklen_t) -> T
    ) -> T {
        if address.family == .v4 {
            var storage = sockaddr_in()
            storage.sin_family = sa_family_t(AF_INET)
            storage.sin_port = UInt16(port).bigEndian
            withUnsafeMutableBytes(of: &storage.sin_addr) { $0.copyBytes(from: address.bytes) }
            return withUnsafePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
        }
        var storage = sockaddr_in6()
        storage.sin6_family = sa_family_t(AF_INET6)
        storage.sin6_port = UInt16(port).bigEndian
        withUnsafeMutableBytes(of: &storage.sin6_addr) { $0.copyBytes(from: address.bytes) }
        return withUnsafePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_in6>.size)) }
        }
    }
}
