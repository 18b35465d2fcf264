#if canImport(Glibc)
import Glibc
#endif
import DNSWire
import Foundation
import HTTPDNSCore
import HTTPDNSTestSupport

/// One DNS query to the stub on 127.0.0.1, over UDP or TCP, decoded; for the stub's boot tests.
enum StubWire {
    static func query(_ name: String, _ type: DNSRecordType, id: UInt16) throws -> [UInt8] {
        try DNSMessage.makeQuery(name: DNSName(name), type: type, id: id, edns: DNSEDNS(udpPayloadSize: 1232)).encode()
    }

    /// The answer and the milliseconds from send to receive; nil message when none came in `wait` ms
    /// (or the port was refused).
    static func udp(
        _ name: String, _ type: DNSRecordType, port: Int, wait: Int32 = 3000, id: UInt16 = .random(in: 1...UInt16.max)
    ) throws -> (message: DNSMessage?, milliseconds: Double) {
        let bytes = try query(name, type, id: id)
        let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        guard fd >= 0 else { throw ToolRunner.Failure("socket") }
        defer { close(fd) }
        guard Dnsmasq.withSockAddr(HTTPDNSIPAddress("127.0.0.1")!, UInt16(port), { connect(fd, $0, $1) }) == 0 else {
            throw ToolRunner.Failure("connect")
        }
        let start = ContinuousClock.now
        guard bytes.withUnsafeBytes({ send(fd, $0.baseAddress, $0.count, 0) }) == bytes.count else { throw ToolRunner.Failure("send") }
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let left = Int32(wait) - Int32(milliseconds(since: start))
            var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard left > 0, poll(&entry, 1, left) == 1 else { return (nil, milliseconds(since: start)) }
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            let elapsed = milliseconds(since: start)
            guard count > 0 else { return (nil, elapsed) }
            guard let message = try? DNSMessage(decoding: Array(buffer[0..<count])), message.id == id else { continue }
            return (message, elapsed)
        }
    }

    /// The answer over a TCP connection (RFC 7766 framing); nil when none came in `wait` ms.
    static func tcp(_ name: String, _ type: DNSRecordType, port: Int, wait: Int32 = 10_000) throws -> DNSMessage? {
        let bytes = try query(name, type, id: 0x5151)
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw ToolRunner.Failure("socket") }
        defer { close(fd) }
        guard Dnsmasq.withSockAddr(HTTPDNSIPAddress("127.0.0.1")!, UInt16(port), { connect(fd, $0, $1) }) == 0 else { return nil }
        let framed = [UInt8(bytes.count >> 8), UInt8(bytes.count & 0xFF)] + bytes
        _ = framed.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while received.count < 2 || received.count < 2 + (Int(received[0]) << 8 | Int(received[1])) {
            var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&entry, 1, wait) == 1 else { return nil }
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            guard count > 0 else { return nil }
            received += buffer[0..<count]
        }
        return try? DNSMessage(decoding: Array(received[2..<(2 + (Int(received[0]) << 8 | Int(received[1])))]))
    }

    static func milliseconds(since start: ContinuousClock.Instant) -> Double {
        let elapsed = ContinuousClock.now - start
        return Double(elapsed.components.seconds) * 1000 + Double(elapsed.components.attoseconds) / 1e15
    }
}
