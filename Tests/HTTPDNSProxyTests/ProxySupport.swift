import DNSSockets
import Foundation
import HTTPDNS
import HTTPDNSCore
import HTTPDNSTestSupport
import HTTPDNSNetworking
@testable import HTTPDNSLoopbackProxy
@testable import HTTPDNSDirect
import XCTest

/// Records the proxy's events for assertions.
final class RecordingProxyMonitor: HTTPDNSProxyMonitor, @unchecked Sendable {
    struct Opened: Equatable {
        var host: String
        var address: HTTPDNSIPAddress
        var attempts: Int
    }

    private let lock = NSLock()
    private var openedEvents: [Opened] = []
    private var failedEvents: [Int] = []
    private var refusedEvents: [Int] = []
    private var closedEvents = 0

    var opened: [Opened] { lock.withLock { openedEvents } }
    var failed: [Int] { lock.withLock { failedEvents } }
    var refused: [Int] { lock.withLock { refusedEvents } }
    var closed: Int { lock.withLock { closedEvents } }

    func proxyTunnelOpened(host: String, port: UInt16, address: HTTPDNSIPAddress, attempts: Int) {
        lock.withLock { openedEvents.append(Opened(host: host, address: address, attempts: attempts)) }
    }

    func proxyTunnelFailed(host: String, port: UInt16, status: Int, reason: String) {
        lock.withLock { failedEvents.append(status) }
    }

    func proxyTunnelClosed(host: String, port: UInt16, bytesToServer: Int64, bytesToClient: Int64) {
        lock.withLock { closedEvents += 1 }
    }

    func proxyRefused(status: Int, reason: String) {
        lock.withLock { refusedEvents.append(status) }
    }
}

/// A blocking TCP client for raw exchanges with the proxy (tests run these off the cooperative pool).
final class RawClient {
    private(set) var fd: Int32

    /// - Parameter receiveBuffer: a SO_RCVBUF to set before connecting (a slow reader's small window), or nil.
    init(_ address: HTTPDNSIPAddress, port: UInt16, timeout: Int = 10, receiveBuffer: Int32? = nil) throws {
        fd = socket(address.family == .v4 ? AF_INET : AF_INET6, Int32(SOCK_STREAM.rawValue), 0)
        var time = timeval(tv_sec: timeout, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &time, socklen_t(MemoryLayout<timeval>.size))
        if var size = receiveBuffer {
            setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        let result = SocketAddress(address: address, port: port).withSockAddr { connect(fd, $0, $1) }
        guard result == 0 else {
            Glibc.close(fd)
            throw ToolRunner.Failure("connect to \(address):\(port): \(String(cString: strerror(errno)))")
        }
    }

    deinit {
        close()
    }

    func close() {
        if fd >= 0 { Glibc.close(fd) }
        fd = -1
    }

    func send(_ text: String) {
        send(bytes: Array(text.utf8))
    }

    /// Sends bytes as they are.
    func send(bytes: [UInt8]) {
        _ = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    }

    /// Reads until the proxy closes (or the receive timeout passes: then `timedOut` is true).
    func readToEnd() -> (text: String, timedOut: Bool) {
        let (bytes, timedOut) = readBytesToEnd()
        return (String(decoding: bytes, as: UTF8.self), timedOut)
    }

    /// ``readToEnd()`` as bytes.
    func readBytesToEnd() -> (bytes: [UInt8], timedOut: Bool) {
        var data: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count > 0 {
                data += buffer[0..<count]
                continue
            }
            let timedOut = count < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)
            return (data, timedOut)
        }
    }

    /// Reads until `marker` appears (or the end, or the timeout).
    func read(until marker: String) -> String {
        var data: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while !String(decoding: data, as: UTF8.self).contains(marker) {
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count <= 0 { break }
            data += buffer[0..<count]
        }
        return String(decoding: data, as: UTF8.self)
    }
}

/// An origin on 127.0.0.1 that answers each connection with fixed bytes (what no HTTP library would
/// write: header values past ASCII), after reading its request head, which it keeps.
final class RawOrigin: @unchecked Sendable {
    private let fd: Int32
    let port: UInt16
    private let requests = HTTPDNSLock<[[UInt8]]>([])

    init(answer: [UInt8]) throws {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        let loopback = HTTPDNSIPAddress("127.0.0.1")!
        guard SocketAddress(address: loopback, port: 0).withSockAddr({ bind(listener, $0, $1) }) == 0, listen(listener, 16) == 0 else {
            Glibc.close(listener)
            throw ToolRunner.Failure("raw origin: \(String(cString: strerror(errno)))")
        }
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        _ = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &length) }
        }
        fd = listener
        port = withUnsafePointer(to: &storage) { SocketAddress(storage: $0)?.port ?? 0 }
        let requests = self.requests
        Thread {
            while true {
                let client = accept(listener, nil, nil)
                guard client >= 0 else { return }
                var head: [UInt8] = []
                var buffer = [UInt8](repeating: 0, count: 4096)
                while !head.suffix(4).elementsEqual([0x0D, 0x0A, 0x0D, 0x0A]) {
                    let count = recv(client, &buffer, buffer.count, 0)
                    guard count > 0 else { break }
                    head += buffer[0..<count]
                }
                requests.withLock { $0.append(head) }
                _ = answer.withUnsafeBytes { Glibc.send(client, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                Glibc.close(client)
            }
        }.start()
    }

    /// The request heads received so far.
    var received: [[UInt8]] { requests.withLock { $0 } }

    func stop() {
        shutdown(fd, Int32(SHUT_RDWR))
        Glibc.close(fd)
    }
}

extension HTTPDNSProxy.Credential {
    /// The `Proxy-Authorization` field line for this credential.
    var fieldLine: String {
        "Proxy-Authorization: Basic \(Data("\(user):\(password)".utf8).base64EncodedString())\r\n"
    }
}

/// curl, run as a child process.
enum Curl {
    static func run(_ arguments: [String]) throws -> ToolRunner.Result {
        let curl = URL(fileURLWithPath: "/usr/bin/curl")
        guard FileManager.default.isExecutableFile(atPath: curl.path) else {
            throw ToolRunner.Failure("curl not found: install the Debian package curl")
        }
        return try ToolRunner(executable: curl).run(["-sS", "--max-time", "20"] + arguments, timeout: .seconds(30), environment: [:])
    }
}
