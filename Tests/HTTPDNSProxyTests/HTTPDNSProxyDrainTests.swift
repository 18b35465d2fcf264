import CHTTPDNSProxy
import DNSSockets
import Foundation
import HTTPDNS
import HTTPDNSCore
import HTTPDNSNetworking
import HTTPDNSTestSupport
@testable import HTTPDNSLoopbackProxy
import XCTest

/// `HTTPDNSProxy.stop(drain:)` in this process, and the kernel behaviour its listeners rely on.
///
/// Synchronous tests, as ``ProxyTests``: the drain is awaited in a task, the sockets are driven here.
final class HTTPDNSProxyDrainTests: XCTestCase {
    /// The drain's first step rests on Linux running a listener's socket filter on each SYN before
    /// the connection is queued, and not on accept(2): with the drop-all filter, a client already
    /// queued is still accepted, a new one never completes its handshake, and once the listener is
    /// closed the new one is refused. Fails if a kernel changes any of that.
    func testRefusingNewClientsKeepsTheQueuedOnesAndLetsNoneIn() throws {
        let loopback = HTTPDNSIPAddress("127.0.0.1")!
        let (fd, port) = try ProxySocket.listen(loopback, port: 0, backlog: 16)
        let listeners = ProxyListeners(fds: [fd], loops: 1)
        let queued = try RawClient(loopback, port: port)
        queued.send("queued")

        listeners.refuseNew()
        let late = httpdns_proxy_socket(AF_INET)
        defer { close(late) }
        let started = SocketAddress(address: loopback, port: port).withSockAddr { connect(late, $0, $1) }
        let code = errno
        XCTAssertEqual(started, -1)
        XCTAssertEqual(code, EINPROGRESS)
        var poller = pollfd(fd: late, events: Int16(POLLOUT), revents: 0)
        XCTAssertEqual(poll(&poller, 1, 300), 0, "a client that comes after completes no handshake")

        let accepted = httpdns_proxy_accept(fd)
        XCTAssertGreaterThanOrEqual(accepted, 0, "the queued client is still accepted")
        var bytes = [UInt8](repeating: 0, count: 16)
        var poller2 = pollfd(fd: accepted, events: Int16(POLLIN), revents: 0)
        _ = poll(&poller2, 1, 5_000)
        XCTAssertEqual(String(decoding: bytes[..<max(0, recv(accepted, &bytes, bytes.count, 0))], as: UTF8.self), "queued")
        close(accepted)
        let none = httpdns_proxy_accept(fd)
        let noneCode = errno
        XCTAssertEqual(none, -1, "no one else in the queue")
        XCTAssertEqual(noneCode, EAGAIN)

        listeners.release()  // the last (only) holder: closed
        // The late client's next SYN (retransmitted after a second) is refused.
        poller = pollfd(fd: late, events: Int16(POLLOUT), revents: 0)
        XCTAssertEqual(poll(&poller, 1, 10_000), 1, "the late connect ends")
        XCTAssertEqual(ProxySocket.pendingError(late), ECONNREFUSED)
    }

    func testStopDrainWaitsForATunnelInFlightAndCutsItAtTheTimeout() throws {
        let origin = try HoldingOrigin()
        defer { origin.stop() }
        let proxy = try startProxy()
        let client = try RawClient(HTTPDNSIPAddress("127.0.0.1")!, port: proxy.port!, receiveBuffer: 16_384)
        client.send("CONNECT 127.0.0.1:\(origin.port) HTTP/1.1\r\n\(proxy.configuration.credential!.fieldLine)\r\n")
        XCTAssertTrue(client.read(until: "\r\n\r\n").hasPrefix("HTTP/1.1 200 "))
        client.send("more")  // the origin answers with more than the sockets hold; the client reads none

        origin.waitForAnswer()
        let (cut, took) = drain(proxy, within: .milliseconds(500))
        XCTAssertEqual(cut, 1, "the tunnel still moving bytes is cut and counted")
        XCTAssertGreaterThanOrEqual(took, .milliseconds(450), "it was given the whole timeout")
        XCTAssertLessThan(took, .seconds(5))
        XCTAssertThrowsError(try RawClient(HTTPDNSIPAddress("127.0.0.1")!, port: proxy.port!), "the listener is closed")
        XCTAssertEqual(drain(proxy, within: .seconds(5)).cut, 0, "a stopped proxy: nothing to do")
    }

    func testAnIdleProxyStopsAtOnce() throws {
        let proxy = try startProxy()
        let (cut, took) = drain(proxy, within: .seconds(5))
        XCTAssertEqual(cut, 0)
        XCTAssertLessThan(took, .seconds(1), "nothing in flight: the drain does not wait for its timeout")
    }

    // MARK: - Helpers

    private func startProxy() throws -> HTTPDNSProxy {
        var configuration = HTTPDNSProxy.Configuration()
        configuration.allowPrivateTargets = true
        let resolver = try HTTPDNSProviderSpec(parsing: "dnspod=http://127.0.0.1:9").makeResolver()
        let proxy = HTTPDNSProxy(engine: HTTPDNSEngine(configuration: HTTPDNSConfiguration(resolvers: [resolver])), configuration: configuration)
        try proxy.start()
        addTeardownBlock { proxy.stop() }
        return proxy
    }

    /// `proxy.stop(drain: timeout)` awaited in a task: what it returned and how long it took.
    private func drain(_ proxy: HTTPDNSProxy, within timeout: Duration) -> (cut: Int?, took: Duration) {
        let result = HTTPDNSLock<Int?>(nil)
        let done = DispatchSemaphore(value: 0)
        let started = ContinuousClock.now
        Task {
            let cut = await proxy.stop(drain: timeout)
            result.withLock { $0 = cut }
            done.signal()
        }
        XCTAssertEqual(done.wait(timeout: .now() + 30), .success)
        return (result.withLock { $0 }, ContinuousClock.now - started)
    }
}

/// An origin on 127.0.0.1 that, once its client sends anything, writes 32 MiB (more than the
/// sockets in between hold) and then keeps the connection open.
private final class HoldingOrigin: @unchecked Sendable {
    let port: UInt16
    private let fd: Int32
    private let answered: DispatchSemaphore

    init() throws {
        let (fd, port) = try ProxySocket.listen(HTTPDNSIPAddress("127.0.0.1")!, port: 0, backlog: 4)
        _ = fcntl(fd, F_SETFL, 0)  // blocking accepts on the origin's own thread
        self.fd = fd
        self.port = port
        let answered = DispatchSemaphore(value: 0)
        self.answered = answered
        let thread = Thread {
            let client = accept(fd, nil, nil)
            guard client >= 0 else { return }
            var byte: UInt8 = 0
            _ = recv(client, &byte, 1, 0)
            var timeout = timeval(tv_sec: 0, tv_usec: 300_000)
            setsockopt(client, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            let chunk = [UInt8](repeating: 0x61, count: 1 << 20)
            var stuck = false
            for _ in 0..<32 where !stuck {
                stuck = chunk.withUnsafeBytes { send(client, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) } < chunk.count
            }
            answered.signal()
            // Held open until the proxy lets go.
            while recv(client, &byte, 1, 0) > 0 {}
            close(client)
        }
        thread.start()
    }

    /// Waits until the origin has written what the sockets take (its writes stall).
    func waitForAnswer() {
        XCTAssertEqual(answered.wait(timeout: .now() + 30), .success, "the origin's writes stall")
    }

    func stop() {
        shutdown(fd, Int32(SHUT_RDWR))
        close(fd)
    }
}
