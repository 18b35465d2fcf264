#if canImport(Glibc)
import Glibc
#endif
import DNSWire
import Foundation
import HTTPDNSCore
import HTTPDNSTestSupport

/// A scripted UDP (and optionally TCP) server on 127.0.0.1 for the cases dnsmasq cannot play:
/// spoofed replies, silence, TC=1 with a hand-made TCP answer delivered byte by byte.
final class FakeDNSServer: Sendable {
    /// What to do with one UDP query: a list of (send from a second socket?, bytes) replies.
    typealias UDPScript = @Sendable (DNSMessage) -> [(fromOtherPort: Bool, bytes: [UInt8])]
    /// The TCP answer for one query (sent one byte per write).
    typealias TCPScript = @Sendable (DNSMessage) -> [UInt8]

    let port: UInt16
    private let udp: Int32
    private let other: Int32
    private let tcp: Int32
    private let stopped = HTTPDNSLock(false)
    private let done = DispatchSemaphore(value: 0)
    let queries = HTTPDNSLock<[DNSMessage]>([])

    init(udp udpScript: @escaping UDPScript, tcp tcpScript: TCPScript? = nil) throws {
        let address = HTTPDNSIPAddress("127.0.0.1")!
        let port = try Dnsmasq.freePort(on: address)
        self.port = port
        udp = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        other = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        tcp = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var one: Int32 = 1
        setsockopt(tcp, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        guard Self.bind(udp, port) == 0, Self.bind(other, 0) == 0, Self.bind(tcp, port) == 0, listen(tcp, 4) == 0 else {
            throw Dnsmasq.Failure(description: "fake server cannot bind 127.0.0.1:\(port): errno \(errno)")
        }
        let thread = Thread { [self] in
            serve(udpScript, tcpScript)
            done.signal()
        }
        thread.start()
    }

    func stop() {
        stopped.withLock { $0 = true }
        done.wait()
        close(udp)
        close(other)
        close(tcp)
    }

    private static func bind(_ fd: Int32, _ port: UInt16) -> Int32 {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
    }

    private func serve(_ udpScript: UDPScript, _ tcpScript: TCPScript?) {
        var buffer = [UInt8](repeating: 0, count: 65_535)
        while !stopped.withLock({ $0 }) {
            var fds = [pollfd(fd: udp, events: Int16(POLLIN), revents: 0), pollfd(fd: tcp, events: Int16(POLLIN), revents: 0)]
            guard poll(&fds, 2, 20) > 0 else { continue }
            if fds[0].revents != 0 {
                var from = sockaddr_storage()
                var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
                let count = buffer.withUnsafeMutableBytes { raw in
                    withUnsafeMutablePointer(to: &from) {
                        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { recvfrom(udp, raw.baseAddress, raw.count, 0, $0, &length) }
                    }
                }
                guard count > 0, let query = try? DNSMessage(decoding: Array(buffer[0..<count])) else { continue }
                queries.withLock { $0.append(query) }
                for reply in udpScript(query) {
                    _ = reply.bytes.withUnsafeBytes { raw in
                        withUnsafePointer(to: &from) {
                            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                                sendto(reply.fromOtherPort ? other : udp, raw.baseAddress, raw.count, 0, $0, length)
                            }
                        }
                    }
                }
            }
            if fds[1].revents != 0, let tcpScript {
                let connection = accept(tcp, nil, nil)
                guard connection >= 0 else { continue }
                serveTCP(connection, tcpScript)
                close(connection)
            }
        }
    }

    /// Reads one length-prefixed query, then writes the answer one byte at a time.
    private func serveTCP(_ connection: Int32, _ script: TCPScript) {
        var received: [UInt8] = []
        var byte: UInt8 = 0
        while received.count < 2 || received.count < 2 + (Int(received[0]) << 8 | Int(received[1])) {
            guard recv(connection, &byte, 1, 0) == 1 else { return }
            received.append(byte)
        }
        guard let query = try? DNSMessage(decoding: Array(received[2...])) else { return }
        queries.withLock { $0.append(query) }
        for value in script(query) {
            var value = value
            guard send(connection, &value, 1, Int32(MSG_NOSIGNAL)) == 1 else { return }
            usleep(200)
        }
    }
}

/// A response to `query` with one A record per address.
func answer(_ query: DNSMessage, id: UInt16? = nil, addresses: [[UInt8]], truncated: Bool = false) -> [UInt8] {
    var message = DNSMessage.response(to: query)
    message.id = id ?? query.id
    message.isTruncated = truncated
    message.answers = addresses.map { DNSRecord(name: query.questions[0].name, ttl: 60, data: .a($0)) }
    return try! message.encode()
}
