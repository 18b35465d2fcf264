import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A TCP connection to a loopback server driven byte by byte, for tests that need many connections
/// at once, half-sent requests (slowloris) or a chosen source address.
package final class RawHTTPClient {
    package let fd: Int32

    /// Connects to `127.0.0.1:port` (blocking), from `source` when given (another 127/8 address).
    package init(port: Int, source: String? = nil, host: String = "127.0.0.1") throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw Failure("socket: \(String(cString: strerror(errno)))") }
        if let source {
            var local = Self.address(source, port: 0)
            let bound = withUnsafePointer(to: &local) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            guard bound == 0 else {
                close(fd)
                throw Failure("bind \(source): \(String(cString: strerror(errno)))")
            }
        }
        var remote = Self.address(host, port: port)
        let connected = withUnsafePointer(to: &remote) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            let text = String(cString: strerror(errno))
            close(fd)
            throw Failure("connect: \(text)")
        }
    }

    deinit { close(fd) }

    package struct Failure: Error, CustomStringConvertible {
        package var description: String
        package init(_ description: String) { self.description = description }
    }

    static func address(_ text: String, port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        inet_pton(AF_INET, text, &address.sin_addr)
        return address
    }

    /// Sends `text`; false when the server has closed or reset the connection.
    @discardableResult
    package func send(_ text: String) -> Bool {
        send(bytes: Array(text.utf8))
    }

    /// Sends `bytes` (a binary PROXY v2 header, say); false when the server has closed or reset the connection.
    @discardableResult
    package func send(bytes: [UInt8]) -> Bool {
        var sent = 0
        while sent < bytes.count {
            let count = bytes[sent...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard count > 0 else { return false }
            sent += count
        }
        return true
    }

    /// What the server sent until it closed, or until `timeout` passed (then `closed` is false).
    package func readAll(timeout: Double) -> (data: [UInt8], closed: Bool, reset: Bool) {
        var data: [UInt8] = []
        let end = Date().addingTimeInterval(timeout)
        var buffer = [UInt8](repeating: 0, count: 16_384)
        while true {
            let left = end.timeIntervalSinceNow
            guard left > 0 else { return (data, false, false) }
            var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, Int32(left * 1000) + 1) > 0 else { continue }
            let count = recv(fd, &buffer, buffer.count, 0)
            if count > 0 {
                data += buffer[..<count]
            } else {
                return (data, true, count < 0 && errno == ECONNRESET)
            }
        }
    }

    /// Reads until one whole HTTP/1.1 response with `Content-Length` has arrived (or the
    /// connection ended, or `timeout` passed); returns the status (0 for none) and the body text.
    package func readResponse(timeout: Double) -> (status: Int, body: String, closed: Bool) {
        var data: [UInt8] = []
        let end = Date().addingTimeInterval(timeout)
        var buffer = [UInt8](repeating: 0, count: 16_384)
        while true {
            if let parsed = Self.parse(data) { return (parsed.status, parsed.body, false) }
            let left = end.timeIntervalSinceNow
            guard left > 0 else { return (0, "", false) }
            var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, Int32(left * 1000) + 1) > 0 else { continue }
            let count = recv(fd, &buffer, buffer.count, 0)
            guard count > 0 else {
                let parsed = Self.parse(data)
                return (parsed?.status ?? 0, parsed?.body ?? "", true)
            }
            data += buffer[..<count]
        }
    }

    static func parse(_ data: [UInt8]) -> (status: Int, body: String)? {
        let text = String(decoding: data, as: UTF8.self)
        guard let split = text.range(of: "\r\n\r\n") else { return nil }
        let head = text[..<split.lowerBound]
        let parts = head.split(separator: " ", maxSplits: 2)
        guard parts.count >= 2, let status = Int(parts[1]) else { return nil }
        let body = String(text[split.upperBound...])
        for line in head.split(separator: "\r\n") where line.lowercased().hasPrefix("content-length:") {
            guard let length = Int(line.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)),
                  body.utf8.count >= length
            else { return nil }
        }
        return (status, body)
    }
}
