#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import CSockets
import DNSSockets
import DNSStubCore
import Foundation
import HTTPDNSCore
import HTTPDNSOperations
import Synchronization

/// The stub's I/O shell: a UDP socket and a TCP listener on one address and port, each served by a
/// thread of its own, and one thread per TCP connection (bounded). Blocking socket calls stay on
/// those threads; resolution (``DNSStubResolver``) runs on the upstreams' threads and in tasks.
///
/// Which thread owns what: the UDP thread reads datagrams and answers rejections and cached
/// answers itself; any other query is handed to the resolver, and its answer is sent (non-blocking
/// `sendto`) from the thread it arrives on: an upstream's, or a task's for the engine's answers.
/// The accept thread owns the listener; each connection thread owns its descriptor, hands each
/// query it reads to the resolver at once and writes the answers as they come back (pipelined
/// queries are resolved concurrently and answered in any order, RFC 7766 §6.2.1.1).
///
/// The drain (``drain(within:)``, issue 25): the listener refuses new handshakes, accepts those
/// already answered for a short grace and closes; the UDP thread reads what the kernel already
/// queued and stops reading; each connection answers the queries it has read and closes; every
/// query taken is answered before ``drain(within:)`` returns.
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
        /// Queries of one TCP connection resolved at once (RFC 7766 §6.2.1.1: pipelined queries are
        /// processed concurrently, answered as they are ready); past it the connection reads no
        /// more until one is answered. Default 64.
        package var tcpMaxInFlight: Int = 64
        /// UDP queries being resolved at once; more are dropped (the client retries). Default 1,024.
        package var maxUDPInFlight: Int = 1024
        /// The front's settings (the UDP payload size cap).
        package var front = DNSStubFront.Configuration()
        /// How long the draining listener still accepts handshakes the kernel answered before it
        /// refused new ones. Default 200 ms.
        package var handshakeGrace: Duration = .milliseconds(200)
        /// The per-client rate limit (``DNSStubRateLimiter``): off for loopback, 1,000/s otherwise.
        package var rateLimit = DNSStubRateLimiter.Configuration()

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
    let rateLimiter: HTTPDNSLock<DNSStubRateLimiter>
    /// Serving threads not yet finished (UDP, accept, connections).
    let threads = Atomic<Int>(0)

    /// Binds both sockets and starts serving.
    /// - Throws: ``DNSStubError`` `.socket` when either socket cannot be bound.
    /// - Parameter activated: systemd's sockets (``DNSStubSystemd/activatedSockets(environment:)``),
    ///   served as they are instead of binding ``Configuration/address`` and ``Configuration/port``.
    package init(
        resolver: DNSStubResolver, configuration: Configuration = Configuration(), activated: (udp: Int32, tcp: Int32)? = nil
    ) throws(DNSStubError) {
        self.configuration = configuration
        self.resolver = resolver
        front = DNSStubFront(configuration: configuration.front)
        rateLimiter = HTTPDNSLock(DNSStubRateLimiter(configuration: configuration.rateLimit))
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
        startThread("httpdns stub udp") { [self] in serveUDP() }
        startThread("httpdns stub tcp") { [self] in acceptTCP() }
    }

    /// Refuses new TCP handshakes at once and stops reading within ``slice`` milliseconds; what was
    /// read is still answered (``drain(within:)`` waits for it). Idempotent.
    package func stop() {
        guard !stopped.exchange(true, ordering: .acquiringAndReleasing) else { return }
        _ = httpdns_refuse_new_connections(tcp.fd)
    }

    /// Stops (``stop()``) and waits until every query read has been answered and every serving
    /// thread has finished, or until `timeout`.
    /// - Returns: whether everything finished in time.
    package func drain(within timeout: Duration) async -> Bool {
        stop()
        let deadline = ContinuousClock.now + timeout
        while threads.load(ordering: .acquiring) > 0 || udpInFlight.load(ordering: .acquiring) > 0 {
            guard ContinuousClock.now < deadline else { return false }
            try? await Task.sleep(for: .milliseconds(5))
        }
        return true
    }

    /// Runs `body` on a thread of its own, counted in ``threads``.
    func startThread(_ name: String, _ body: @escaping @Sendable () -> Void) {
        threads.add(1, ordering: .relaxed)
        let thread = Thread { [self] in
            body()
            threads.subtract(1, ordering: .releasing)
        }
        thread.name = name
        thread.start()
    }

    var isStopped: Bool { stopped.load(ordering: .acquiring) }

    func allows(_ address: HTTPDNSIPAddress) -> Bool {
        configuration.allowFrom.contains { $0.contains(address) }
    }

    private func serveUDP() {
        // One system call per datagram: a receive that blocks up to ``slice`` (then the stop is
        // checked), not a poll before each receive (a third of the calls, measured under dnsperf).
        // Answers made here wait in `batch` only while more queries are queued (DNSStubUDPBatch).
        udp.blockReceives(timeoutMilliseconds: Self.slice)
        var thread = UDPThreadState()
        while !isStopped {
            if !receiveUDP(&thread, wait: thread.batch.isEmpty) || thread.batch.isFull { thread.batch.flush(on: udp.fd) }
        }
        // The drain: what the kernel queued before the stop is answered too.
        while receiveUDP(&thread, wait: false) {
            if thread.batch.isFull { thread.batch.flush(on: udp.fd) }
        }
        thread.batch.flush(on: udp.fd)
    }

    /// What the UDP thread alone owns.
    private struct UDPThreadState {
        var buffer = [UInt8](repeating: 0, count: 65_536)
        /// Answers made on the thread, sent together.
        var batch = DNSStubUDPBatch()
        /// Answers made on the thread, repeated for the same query bytes for a moment.
        var packets = DNSStubPacketCache<DNSStubMetrics.Source>()
        /// The resolver's ``DNSStubResolver/generation`` the packet cache was filled under.
        var generation = 0
    }

    /// Reads and handles one datagram, waiting up to ``slice`` for it when `wait`; false when none
    /// came. Answers made on this thread go into the batch; the others are sent where they arrive.
    ///
    /// An allowed client's query (with no rate limit for it, and no query log to write) is first
    /// looked up whole in the packet cache (``DNSStubPacketCache``): a repeat of a query answered
    /// here a moment ago is answered without being parsed, only its ID changed.
    private func receiveUDP(_ thread: inout UDPThreadState, wait: Bool) -> Bool {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let count = thread.buffer.withUnsafeMutableBytes { bytes in
            withUnsafeMutablePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    recvfrom(udp.fd, bytes.baseAddress, bytes.count, wait ? 0 : Int32(MSG_DONTWAIT), $0, &length)
                }
            }
        }
        guard count >= 0 else { return errno == EINTR }
        guard let peer = withUnsafePointer(to: &storage, { SocketAddress(storage: UnsafeRawPointer($0)) }) else { return true }
        let message = thread.buffer[0..<count]
        let allowed = allows(peer.address)
        let repeatable = allowed && resolver.repeatsAnswers && configuration.rateLimit.queriesPerSecond(for: peer.address) == 0
        var now = 0.0
        if repeatable {
            let generation = resolver.generation.load(ordering: .acquiring)
            if generation != thread.generation {
                thread.packets.removeAll()
                thread.generation = generation
            }
            now = resolver.now
            if let hit = thread.packets.answer(message, now: now) {
                thread.batch.append(hit.answer, to: peer)
                resolver.countRepeated(hit.source)
                return true
            }
        }
        switch rateLimited(front.receive(Array(message), transport: .udp, clientAllowed: allowed), client: peer.address) {
        case .drop:
            break
        case .reply(let bytes, let reason):
            thread.batch.append(bytes, to: peer)
            resolver.frontReplied(.udp, reason)
        case .resolve(let request):
            // A cached answer goes out from this thread: a task per query would cost more than it.
            if let (response, source) = resolver.answerAtOnce(request, client: peer.address) {
                let answer = front.encode(response, for: request)
                thread.batch.append(answer, to: peer)
                if repeatable { thread.packets.store(message, answer: answer, now: now, source: source) }
                return true
            }
            guard udpInFlight.add(1, ordering: .relaxed).newValue <= configuration.maxUDPInFlight else {
                udpInFlight.subtract(1, ordering: .relaxed)
                return true
            }
            // The answer goes out from wherever it arrives (an upstream's answer: libcurl's loop
            // thread), with no hop through the task pool: a cold miss costs the upstream's round
            // trip and little more (bench row 11e).
            let socket = udp
            resolver.answer(request, client: peer.address) { [self] response in
                socket.send(front.encode(response, for: request), to: peer)
                udpInFlight.subtract(1, ordering: .releasing)
            }
        }
        return true
    }

    private func acceptTCP() {
        while !isStopped {
            guard tcp.wait(for: Int16(POLLIN), milliseconds: Self.slice) != 0 else { continue }
            acceptOne()
        }
        // The drain: no new handshake since ``stop()``; those the kernel already answered complete
        // within the grace and are served; then the listener closes (a retried SYN is refused).
        let grace = ContinuousClock.now + configuration.handshakeGrace
        while ContinuousClock.now < grace {
            if tcp.wait(for: Int16(POLLIN), milliseconds: 10) != 0 { acceptOne() }
        }
        while tcp.wait(for: Int16(POLLIN), milliseconds: 0) != 0, acceptOne() {}
        _ = shutdown(tcp.fd, Int32(SHUT_RDWR))
    }

    /// Accepts one connection and starts its thread; false when none was waiting.
    @discardableResult
    private func acceptOne() -> Bool {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let fd = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                // Glibc does not import accept4; the tool starts no child while serving.
                accept(tcp.fd, $0, &length)
            }
        }
        guard fd >= 0 else { return false }
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        let connection = DNSStubSocket(fd: fd)
        guard let peer = withUnsafePointer(to: &storage, { SocketAddress(storage: UnsafeRawPointer($0)) }) else { return true }
        guard tcpConnections.add(1, ordering: .relaxed).newValue <= configuration.maxTCPConnections else {
            // Over the limit: closed at once (as `connection` goes), the client tries again later.
            tcpConnections.subtract(1, ordering: .relaxed)
            return true
        }
        let allowed = allows(peer.address)
        startThread("httpdns stub tcp conn") { [self] in
            serveTCP(connection, allowed: allowed, client: peer.address)
            tcpConnections.subtract(1, ordering: .relaxed)
        }
        return true
    }
}
