import Foundation
import HTTPDNSCore
#if canImport(Glibc)
import Glibc
#endif

/// A tiny HTTP proxy on loopback for tests: it records each request line and answers by itself.
///
/// A plain-HTTP request (absolute form, `GET http://host/path HTTP/1.1`) gets `200` with the body
/// `proxied <request line>`, as if the proxy had resolved the host and fetched it; `CONNECT` gets
/// ``connectStatus`` (a refusal by default: the proxy "cannot reach" the origin, CFNetwork's 310).
/// One connection at a time, on a thread of its own; heads larger than 64 KiB are cut off.
final class LoopbackProxy: @unchecked Sendable {
    let port: UInt16
    let connectStatus: String
    private let listener: Int32
    private let lines = HTTPDNSLock<[String]>([])
    private let done = DispatchSemaphore(value: 0)

    init(address: String = "127.0.0.1", connectStatus: String = "403 Forbidden") throws {
        self.connectStatus = connectStatus
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard listener >= 0 else { throw POSIXError(.EMFILE) }
        var one: Int32 = 1
        setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var storage = sockaddr_in()
        storage.sin_family = sa_family_t(AF_INET)
        storage.sin_port = 0
        inet_pton(AF_INET, address, &storage.sin_addr)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &storage) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address -> Bool in
                bind(listener, address, length) == 0 && listen(listener, 16) == 0
                    && getsockname(listener, address, &length) == 0
            }
        }
        guard bound else {
            close(listener)
            throw POSIXError(.EADDRNOTAVAIL)
        }
        self.listener = listener
        port = UInt16(bigEndian: storage.sin_port)
        let thread = Thread { [self] in serve() }
        thread.start()
    }

    /// The request lines received, in order.
    var requestLines: [String] { lines.withLock { $0 } }

    /// Stops accepting and waits for the thread to end.
    func stop() {
        shutdown(listener, Int32(SHUT_RDWR))
        _ = done.wait(timeout: .now() + 5)
        close(listener)
    }

    private func serve() {
        defer { done.signal() }
        while true {
            let connection = accept(listener, nil, nil)
            guard connection >= 0 else { return }
            handle(connection)
            close(connection)
        }
    }

    private func handle(_ connection: Int32) {
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(connection, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var head = [UInt8]()
        var buffer = [UInt8](repeating: 0, count: 4096)
        let end = Array("\r\n\r\n".utf8)
        while head.count < 65_536, !head.ends(with: end) {
            let count = read(connection, &buffer, buffer.count)
            guard count > 0 else { return }
            head += buffer[0..<count]
        }
        let text = String(decoding: head, as: UTF8.self)
        let line = text.range(of: "\r\n").map { String(text[..<$0.lowerBound]) } ?? text
        lines.withLock { $0.append(line) }
        let reply: String
        if line.hasPrefix("CONNECT ") {
            reply = "HTTP/1.1 \(connectStatus)\r\nContent-Length: 0\r\n\r\n"
        } else {
            let body = "proxied \(line)"
            reply = "HTTP/1.1 200 OK\r\nContent-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n\(body)"
        }
        let bytes = Array(reply.utf8)
        _ = bytes.withUnsafeBytes { write(connection, $0.baseAddress, $0.count) }
    }
}

private extension Array where Element == UInt8 {
    func ends(with suffix: [UInt8]) -> Bool {
        count >= suffix.count && Array(self[(count - suffix.count)...]) == suffix
    }
}
