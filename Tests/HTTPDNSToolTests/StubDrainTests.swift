#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import Foundation
import HTTPDNSCore
import HTTPDNSTestSupport
import XCTest

/// `httpdns stub`'s drain (issue 25): SIGTERM while queries wait on a slow upstream. Every query
/// already received, over UDP and pipelined on TCP, is answered before the stub exits 0, and a
/// connection begun after the signal is not served. Before the drain the stub exited at once and
/// these answers were lost.
final class StubDrainTests: ToolTestCase {
    func testQueriesInFlightAtSIGTERMAreAllAnsweredAndNewConnectionsAreNot() throws {
        let upstream = try SlowTXTUpstream(delay: .milliseconds(1200))
        defer { upstream.stop() }
        let base = try startService(zone: #"{"www.example.test": {"A": ["127.0.0.10"], "ttl": 60}}"#)
        let stub = try runner.start([
            "stub", "--listen", "127.0.0.1:0", "--provider", "dnspod=\(base)", "--allow-private",
            "--upstream", "udp=127.0.0.1:\(upstream.port)", "--timeout", "4",
        ])
        addCleanup { stub.send(SIGKILL) }
        let line = try stub.waitForLine(startingWith: "listening on ")
        let port = try XCTUnwrap(line.split(separator: ":").last.flatMap { UInt16($0) }, line)

        // Four UDP queries and three pipelined on one TCP connection, all waiting on the upstream.
        let udp = try RawSocket(datagram: true)
        for id in 1...4 { try udp.sendDatagram(Self.query(id: UInt16(id), "udp\(id).example.test"), port: port) }
        let tcp = try RawSocket(datagram: false)
        XCTAssertTrue(tcp.connect(port: port, within: 3000), "connected before the signal")
        try tcp.sendAll((11...13).flatMap { id -> [UInt8] in
            let query = Self.query(id: UInt16(id), "tcp\(id).example.test")
            return [UInt8(query.count >> 8), UInt8(query.count & 0xFF)] + query
        })
        try waitUntil("the upstream holds all seven queries", stub) { upstream.received >= 7 }
        stub.send(SIGTERM)
        try waitUntil("the drain begins", stub) { String(decoding: stub.stderr, as: UTF8.self).contains("httpdns stub: draining") }
        let late = try RawSocket(datagram: false)
        XCTAssertFalse(late.connect(port: port, within: 3000), "a connection begun during the drain is not taken")

        var udpAnswers: [UInt16: [UInt8]] = [:]
        while udpAnswers.count < 4, let answer = udp.receiveDatagram(within: 5000) {
            udpAnswers[UInt16(answer[0]) << 8 | UInt16(answer[1])] = answer
        }
        XCTAssertEqual(udpAnswers.keys.sorted(), [1, 2, 3, 4], "every UDP query read before the signal is answered")
        let tcpAnswers = tcp.receiveFramed(count: 3, within: 5000)
        // Resolved concurrently, answered as they are ready: in any order, the ID pairs them (RFC 7766 §6.2.1.1).
        XCTAssertEqual(tcpAnswers.map { UInt16($0[0]) << 8 | UInt16($0[1]) }.sorted(), [11, 12, 13], "every pipelined query answered")
        for answer in Array(udpAnswers.values) + tcpAnswers {
            XCTAssertEqual(answer.count > 7 ? [answer[3] & 0x0F, answer[7]] : [], [0, 1], "NOERROR with one answer")
            XCTAssertTrue(String(decoding: answer, as: UTF8.self).contains("slow"), "the upstream's TXT")
        }
        XCTAssertEqual(try stub.wait(timeout: .seconds(20)), 0, String(decoding: stub.stderr, as: UTF8.self))
        XCTAssertEqual(stub.sanitizerReports, [])
    }

    /// A TXT query with RD set.
    static func query(id: UInt16, _ name: String) -> [UInt8] {
        [UInt8(id >> 8), UInt8(id & 0xFF), 1, 0, 0, 1, 0, 0, 0, 0, 0, 0]
            + name.split(separator: ".").flatMap { [UInt8($0.utf8.count)] + Array($0.utf8) } + [0, 0, 16, 0, 1]
    }
}

/// A UDP DNS server on 127.0.0.1 that answers every question with one TXT record "slow", after
/// `delay`: a slow upstream without netem.
final class SlowTXTUpstream: Sendable {
    let port: UInt16
    private let socket: RawSocket
    private let stopped = HTTPDNSLock(false)
    private let count = HTTPDNSLock(0)
    private let done = DispatchSemaphore(value: 0)

    var received: Int { count.withLock { $0 } }

    /// - Parameter address: where to listen (IPv4, host order) and on which port; default 127.0.0.1, a free port.
    init(delay: Duration, address: (UInt32, UInt16) = (0x7F00_0001, 0)) throws {
        socket = try RawSocket(datagram: true)
        port = try socket.bind(address.0, port: address.1)
        let thread = Thread { [self] in
            while !stopped.withLock({ $0 }) {
                guard let (query, peer) = socket.receiveDatagramWithPeer(within: 100), let answer = Self.answer(query) else { continue }
                count.withLock { $0 += 1 }
                let milliseconds = Int(delay.components.seconds * 1000 + delay.components.attoseconds / 1_000_000_000_000_000)
                DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(milliseconds)) { [socket] in
                    socket.sendDatagram(answer, to: peer)
                }
            }
            done.signal()
        }
        thread.start()
    }

    func stop() {
        stopped.withLock { $0 = true }
        done.wait()
    }

    /// The question echoed with QR, RA and one TXT answer; nil for what is not a one-question query.
    static func answer(_ query: [UInt8]) -> [UInt8]? {
        guard query.count > 12, query[4] == 0, query[5] == 1 else { return nil }
        var end = 12
        while end < query.count, query[end] != 0 { end += Int(query[end]) + 1 }
        guard end + 5 <= query.count else { return nil }
        let question = Array(query[12...(end + 4)])
        let text = Array("slow".utf8)
        return [query[0], query[1], 0x81, 0x80, 0, 1, 0, 1, 0, 0, 0, 0] + question
            + [0xC0, 12, 0, 16, 0, 1, 0, 0, 0, 60, 0, UInt8(text.count + 1), UInt8(text.count)] + text
    }
}

/// A blocking IPv4 socket on loopback for the drain test's raw exchanges.
final class RawSocket: Sendable {
    let fd: Int32

    init(datagram: Bool) throws {
        fd = Glibc.socket(AF_INET, Int32(datagram ? SOCK_DGRAM.rawValue : SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw ToolRunner.Failure("socket: errno \(errno)") }
    }

    private let closed = HTTPDNSLock(false)

    deinit {
        closeNow()
    }

    /// Closes the descriptor now (once): its port is then closed, as a dead server's.
    func closeNow() {
        guard closed.withLock({ done in defer { done = true }; return !done }) else { return }
        close(fd)
    }

    /// Binds 127.0.0.1:0; the port chosen.
    func bindLoopback() throws -> UInt16 {
        try bind(0x7F00_0001, port: 0)
    }

    /// Binds an IPv4 `address` (host order) and `port` (0 picks one; 53 needs root); the port bound.
    func bind(_ host: UInt32, port: UInt16) throws -> UInt16 {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = host.bigEndian
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let result = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.bind(fd, $0, length) == 0 ? getsockname(fd, $0, &length) : -1 }
        }
        guard result == 0 else { throw ToolRunner.Failure("bind: errno \(errno)") }
        return UInt16(bigEndian: address.sin_port)
    }

    /// Connects to 127.0.0.1:`port`; false when refused or not done within `milliseconds`.
    func connect(port: UInt16, within milliseconds: Int32) -> Bool {
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        defer { _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) }
        let started = Dnsmasq.withSockAddr(HTTPDNSIPAddress("127.0.0.1")!, port) { Glibc.connect(fd, $0, $1) }
        if started == 0 { return true }
        guard errno == EINPROGRESS else { return false }
        var entry = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
        guard poll(&entry, 1, milliseconds) == 1 else { return false }
        var error: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        return getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) == 0 && error == 0
    }

    func sendDatagram(_ bytes: [UInt8], port: UInt16) throws {
        let sent = Dnsmasq.withSockAddr(HTTPDNSIPAddress("127.0.0.1")!, port) { address, length in
            bytes.withUnsafeBytes { sendto(fd, $0.baseAddress, $0.count, 0, address, length) }
        }
        guard sent == bytes.count else { throw ToolRunner.Failure("sendto: errno \(errno)") }
    }

    func sendDatagram(_ bytes: [UInt8], to peer: sockaddr_in) {
        var peer = peer
        _ = withUnsafePointer(to: &peer) { address in
            address.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                bytes.withUnsafeBytes { sendto(fd, $0.baseAddress, $0.count, 0, address, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
        }
    }

    func sendAll(_ bytes: [UInt8]) throws {
        let sent = bytes.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        guard sent == bytes.count else { throw ToolRunner.Failure("send: errno \(errno)") }
    }

    func receiveDatagram(within milliseconds: Int32) -> [UInt8]? {
        receiveDatagramWithPeer(within: milliseconds)?.0
    }

    func receiveDatagramWithPeer(within milliseconds: Int32) -> ([UInt8], sockaddr_in)? {
        var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&entry, 1, milliseconds) == 1 else { return nil }
        var buffer = [UInt8](repeating: 0, count: 4096)
        var peer = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let count = buffer.withUnsafeMutableBytes { bytes in
            withUnsafeMutablePointer(to: &peer) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { recvfrom(fd, bytes.baseAddress, bytes.count, 0, $0, &length) }
            }
        }
        return count > 0 ? (Array(buffer[0..<count]), peer) : nil
    }

    /// Up to `count` length-prefixed messages, each within `milliseconds` of the one before.
    func receiveFramed(count: Int, within milliseconds: Int32) -> [[UInt8]] {
        var received: [UInt8] = []
        var messages: [[UInt8]] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while messages.count < count {
            var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&entry, 1, milliseconds) == 1 else { break }
            let read = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            guard read > 0 else { break }
            received += buffer[0..<read]
            while received.count >= 2, received.count >= 2 + (Int(received[0]) << 8 | Int(received[1])) {
                let length = Int(received[0]) << 8 | Int(received[1])
                messages.append(Array(received[2..<(2 + length)]))
                received.removeFirst(2 + length)
            }
        }
        return messages
    }
}
