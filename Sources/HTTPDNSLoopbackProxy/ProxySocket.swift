import CHTTPDNSProxy
import DNSSockets
import HTTPDNSCore
#if canImport(Glibc)
import Glibc
#endif

/// The few socket calls the proxy makes, on non-blocking descriptors, with errno turned into values.
enum ProxySocket {
    /// A listening socket on `address`:`port` (0 picks a port); returns it and the bound port.
    static func listen(_ address: HTTPDNSIPAddress, port: UInt16, backlog: Int32) throws(HTTPDNSProxyError) -> (Int32, UInt16) {
        let fd = httpdns_proxy_socket(address.family == .v4 ? AF_INET : AF_INET6)
        guard fd >= 0 else { throw HTTPDNSProxyError(.cannotListen, "socket: \(errorText(errno))") }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        if address.family == .v6 { setsockopt(fd, Int32(IPPROTO_IPV6), IPV6_V6ONLY, &one, socklen_t(MemoryLayout<Int32>.size)) }
        // Accepted sockets inherit it (Linux), which spares a setsockopt per client.
        setNoDelay(fd)
        let bound = SocketAddress(address: address, port: port).withSockAddr { bind(fd, $0, $1) }
        guard bound == 0, Glibc.listen(fd, backlog) == 0 else {
            let code = errno
            close(fd)
            throw HTTPDNSProxyError(.cannotListen, "\(address.uriText):\(port): \(errorText(code))")
        }
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let actual = withUnsafeMutablePointer(to: &storage) { pointer -> UInt16? in
            guard pointer.withMemoryRebound(to: sockaddr.self, capacity: 1, { getsockname(fd, $0, &length) }) == 0 else { return nil }
            return SocketAddress(storage: pointer)?.port
        }
        guard let actual else {
            let code = errno
            close(fd)
            throw HTTPDNSProxyError(.cannotListen, "getsockname: \(errorText(code))")
        }
        return (fd, actual)
    }

    /// How a non-blocking connect started.
    enum ConnectStart {
        case connected(Int32)
        case inProgress(Int32)
        case failed(Int32)  // errno
    }

    /// Starts a non-blocking TCP connect to `address`:`port`.
    static func connect(_ address: HTTPDNSIPAddress, port: UInt16) -> ConnectStart {
        let fd = httpdns_proxy_socket(address.family == .v4 ? AF_INET : AF_INET6)
        guard fd >= 0 else { return .failed(errno) }
        setNoDelay(fd)
        let result = SocketAddress(address: address, port: port).withSockAddr { Glibc.connect(fd, $0, $1) }
        if result == 0 { return .connected(fd) }
        let code = errno
        if code == EINPROGRESS { return .inProgress(fd) }
        close(fd)
        return .failed(code)
    }

    /// The pending error of a socket whose connect finished (0 when it succeeded).
    static func pendingError(_ fd: Int32) -> Int32 {
        var code: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        guard getsockopt(fd, SOL_SOCKET, SO_ERROR, &code, &length) == 0 else { return errno }
        return code
    }

    /// Whether bytes wait to be read on `fd` (a peek; its end or an error is not bytes).
    static func hasUnreadBytes(_ fd: Int32) -> Bool {
        var byte: UInt8 = 0
        return recv(fd, &byte, 1, Int32(MSG_PEEK | MSG_DONTWAIT)) > 0
    }

    /// Whether TCP_NODELAY is set on `fd` (for an assertion: accepted sockets inherit it).
    static func hasNoDelay(_ fd: Int32) -> Bool {
        var value: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        return getsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &value, &length) == 0 && value != 0
    }

    static func setNoDelay(_ fd: Int32) {
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
    }

    static func errorText(_ code: Int32) -> String {
        String(cString: strerror(code))
    }
}
