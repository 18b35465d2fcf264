#if canImport(Glibc)
import Glibc
#endif
import DNSSockets
import HTTPDNSCore
@testable import HTTPDNSFleet
import HTTPDNSTestSupport
import XCTest

/// The NOTIFY listener's sockets: one port for UDP and TCP, also when the kernel picks it.
final class HTTPDNSNotifyListenerTests: XCTestCase {
    /// Port 0: the UDP port the kernel picks may be taken for TCP. With many TCP ports taken by
    /// listeners (here several hundred of the ephemeral range's ~28,000), some of 300 picks meet
    /// one, and each must move on to another port rather than fail (`httpdns serve --notify-listen
    /// 127.0.0.1:0` failed so in a test run, EADDRINUSE).
    func testPortZeroFindsAPortFreeForBothProtocols() throws {
        var limit = rlimit()
        getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit)
        let count = max(100, min(1_000, Int(limit.rlim_cur) - 300))
        var listeners: [Int32] = []
        defer { listeners.forEach { close($0) } }
        let loopback = HTTPDNSIPAddress("127.0.0.1")!
        for _ in 0..<count {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            guard fd >= 0 else { break }
            listeners.append(fd)
            guard Dnsmasq.withSockAddr(loopback, 0, { bind(fd, $0, $1) }) == 0, listen(fd, 1) == 0 else { break }
        }
        XCTAssertEqual(listeners.count, count)
        for pick in 0..<300 {
            let (udp, tcp, bound) = try HTTPDNSNotifyListener.bindSockets(SocketAddress(address: loopback, port: 0))
            close(udp)
            close(tcp)
            XCTAssertNotEqual(bound.port, 0, "pick \(pick)")
        }
    }

    func testAGivenPortTakenForTCPIsRefusedNamingIt() throws {
        let loopback = HTTPDNSIPAddress("127.0.0.1")!
        let taken = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(taken) }
        XCTAssertEqual(Dnsmasq.withSockAddr(loopback, 0, { bind(taken, $0, $1) }), 0)
        XCTAssertEqual(listen(taken, 1), 0)
        var name = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &name) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(taken, $0, &length) } }
        let port = UInt16(bigEndian: name.sin_port)
        XCTAssertThrowsError(try HTTPDNSNotifyListener.bindSockets(SocketAddress(address: loopback, port: port))) { error in
            XCTAssertTrue("\(error)".contains("cannot listen for NOTIFY over TCP on 127.0.0.1:\(port)"), "\(error)")
        }
    }
}
