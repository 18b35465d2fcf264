#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import DNSSockets
import Foundation
import HTTPDNSCore
import Synchronization

/// The stub's I/O shell: a UDP socket and a TCP listener on one address and port, each served by a
/// thread of its own, and one thread per TCP connection (bounded). Blocking socket calls stay on
/// those threads; only resolution (``DNSStubResolver``) runs as tasks.
///
/// Which thread owns what: the UDP thread reads datagrams and answers rejections itself; each
/// query becomes a task that sends its own answer (non-blocking `sendto`, so a task never blocks).
/// The accept thread owns the listener; each connection thread owns its descriptor and answers its
/// queries one after another, waiting for each task (pipelined queries are answered in order).
package final class DNSStubServer: Sendable {
    /// Settings, each with its default.
    package struct Configuration: Sendable {
        /// Where to listen; default 127.0.0.153 (not systemd-resolved's 127.0.0.53 and .54).
        package var address: HTTPDNSIPAddress = HTTPDNSIPAddress("127.0.0.153")!
        /// UDP and TCP port; 0 picks a free one for both. Default 53.
        package var port: UInt16 = 53
        /// Clients answered; others get REFUSED (EDE 18). Default loopback only.
        package var allowFrom: [HTTPDNSNetwork] = DNSStubServer.loopback
        /// Most TCP connections at once; more are closed at once. Default 128.
        package var maxTCPConnections: Int = 128
        /// A TCP connection with no query under way is closed after this long (RFC 7766 §6.2.3:
        /// seconds, not minutes). Default 10 s.
        package var tcpIdleTimeout: Duration = .seconds(10)
        /// Time for the rest of a TCP message once its first byte came, and for writing an answer:
        /// a slow client loses its connection. Default 5 s.
        package var tcpMessageTimeout: Duration = .seconds(5)
        /// UDP queries being resolved at once; more are dropped (the client retries). Default 1,024.
        package var maxUDPInFlight: Int = 1024
        /// The front's settings (the UDP payload size cap).
        package var front = DNSStubFront.Configuration()

        package init() {}
    }

    /// 127.0.0.0/8 and ::1.
    package static let loopback: [HTTPDNSNetwork] = [
        HTTPDNSNetwork(address: HTTPDNSIPAddress("127.0.0.0")!, prefixLength: 8),
        HTTPDNSNetwork(address: HTTPDNSIPAddress("::1")!, prefixLength: 128),
    ]

    /// How long a blocking wait lasts before checking for ``stop()``.
    static let slice: Int32 = 200

    let configuration: Configuration
    let resolver: DNSStubResolver
    let front: DNSStubFront
    /// The port both sockets are bound to.
    package let port: UInt16
    private let udp: DNSStubSocket
    let tcp: DNSStubSocket
    let stopped = Atomic<Bool>(false)
    let tcpConnections = Atomic<Int>(0)
    let udpInFlight = Atomic<Int>(0)

    /// Binds both sockets and starts serving.
    /// - Throws: `HTTPDNSError` `.transport` when either socket cannot be bound.
    /// - Parameter activated: systemd's sockets (``DNSStubSystemd/activatedSockets(environment:)``),
    ///   served as they are instead of binding ``Configuration/address`` and ``Configuration/port``.
    package init(
        resolver: DNSStubResolver, configuration: Configuration = Configuration(), activated: (udp: Int32, tcp: Int32)? = nil
    ) throws(HTTPDNSError) {
        self.configuration = configuration
        self.resolver = resolver
        front = DNSStubFront(configuration: configuration.front)
        // Port 0: TCP picks the port and UDP takes the same one; another process may hold that
        // port for UDP, so a few tries.
        var attempt = 0
        while true {
            attempt += 1
            let tcp = try DNSStubSocket.adopt(activated?.tcp, orBind: SocketAddress(address: configuration.address, port: configuration.port), datagram: false)
            guard let bound = tcp.localPort else { throw DNSStubSocket.error("getsockname") }
            do {
                udp = try DNSStubSocket.adopt(activated?.udp, orBind: SocketAddress(address: configuration.address, port: bound), datagram: true)
                self.tcp = tcp
                port = bound
                break
            } catch {
                if configuration.port != 0 || attempt >= 5 { throw error }
            }
        }
        let udpThread = Thread { [self] in serveUDP() }
        udpThread.name = "httpdns stub udp"
        udpThread.start()
        let tcpThread = Thread { [self] in acceptTCP() }
        tcpThread.name = "httpdns stub tcp"
        tcpThread.start()
    }

    /// Stops reading and accepting within ``slice`` milliseconds; queries being resolved finish
    /// on their own. Idempotent.
    package func stop() {
        stopped.store(true, ordering: .releasing)
    }

    var isStopped: Bool { stopped.load(ordering: .acquiring) }

    func allows(_ address: HTTPDNSIPAddress) -> Bool {
        configuration.allowFrom.contains { $0.contains(address) }
    }

    private func serveUDP() {
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while !isStopped {
            guard udp.wait(for: Int16(POLLIN), milliseconds: Self.slice) != 0 else { continue }
            var storage = sockaddr_storage()
            var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
            let count = buffer.withUnsafeMutableBytes { bytes in
                withUnsafeMutablePointer(to: &storage) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                        recvfrom(udp.fd, bytes.baseAddress, bytes.count, Int32(MSG_DONTWAIT), $0, &length)
                    }
                }
            }
            guard count >= 0, let peer = withUnsafePointer(to: &storage, { SocketAddress(storage: UnsafeRawPointer($0)) }) else { continue }
            let message = Array(buffer[0..<count])
            switch front.receive(message, transport: .udp, clientAllowed: allows(peer.address)) {
            case .drop:
                continue
            case .reply(let bytes, _):
                udp.send(bytes, to: peer)
            case .resolve(let request):
                guard udpInFlight.add(1, ordering: .relaxed).newValue <= configuration.maxUDPInFlight else {
                    udpInFlight.subtract(1, ordering: .relaxed)
                    continue
                }
                let socket = udp
                Task { [self] in
                    let response = await resolver.answer(request)
                    socket.send(front.encode(response, for: request), to: peer)
                    udpInFlight.subtract(1, ordering: .relaxed)
                }
            }
        }
    }

    private func acceptTCP() {
        while !isStopped {
            guard tcp.wait(for: Int16(POLLIN), milliseconds: Self.slice) != 0 else { continue }
            var storage = sockaddr_storage()
            var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
            let fd = withUnsafeMutablePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    // Glibc does not import accept4; the tool starts no child while serving.
                    accept(tcp.fd, $0, &length)
                }
            }
            guard fd >= 0 else { continue }
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            let connection = DNSStubSocket(fd: fd)
            guard let peer = withUnsafePointer(to: &storage, { SocketAddress(storage: UnsafeRawPointer($0)) }) else { continue }
            guard tcpConnections.add(1, ordering: .relaxed).newValue <= configuration.maxTCPConnections else {
                // Over the limit: closed at once (as `connection` goes), the client tries again later.
                tcpConnections.subtract(1, ordering: .relaxed)
                continue
            }
            let allowed = allows(peer.address)
            let thread = Thread { [self] in
                serveTCP(connection, allowed: allowed)
                tcpConnections.subtract(1, ordering: .relaxed)
            }
            thread.name = "httpdns stub tcp conn"
            thread.start()
        }
    }
}
