import CHTTPDNSProxy
import Foundation
import HTTPDNSCore
import HTTPDNSTransport

/// The proxy's event loop: one thread, one epoll set, level-triggered, every socket non-blocking.
///
/// Everything but ``execute(_:)``, ``attempt(id:address:port:attempt:)`` and ``stop()`` runs on the
/// loop thread only (the `@unchecked Sendable` below rests on that): the registrations, the
/// connections and their pumps are never touched from elsewhere. Other threads hand work over
/// through the inbox and an eventfd.
final class ProxyLoop: @unchecked Sendable {
    /// What a token in the epoll set stands for.
    enum Registration {
        case listener(Int32)
        case wake
        case client(ProxyConnection)
        case upstream(ProxyConnection)
        case attempt(ProxyConnectAttempt)
    }

    let settings: ProxySettings
    private let epoll: Int32
    private let wake: Int32
    private let listeners: [Int32]
    private let inbox = HTTPDNSLock<[@Sendable () -> Void]>([])

    // Loop-confined state.
    private var registrations: [UInt64: Registration] = [:]
    private var nextToken: UInt64 = 1
    private var connections: [UInt64: ProxyConnection] = [:]
    private var nextConnectionID: UInt64 = 1
    private var running = true
    private var lastScan: UInt64 = 0
    private var thread: Thread?
    /// Scratch buffer for reads that go through user space (request and response heads).
    var scratch = [UInt8](repeating: 0, count: 64 * 1024)

    init(settings: ProxySettings, listeners: [Int32]) throws(HTTPDNSProxyError) {
        self.settings = settings
        self.listeners = listeners
        epoll = httpdns_proxy_epoll_create()
        wake = httpdns_proxy_eventfd()
        guard epoll >= 0, wake >= 0 else {
            if epoll >= 0 { close(epoll) }
            if wake >= 0 { close(wake) }
            throw HTTPDNSProxyError(.cannotListen, "epoll/eventfd: \(ProxySocket.errorText(errno))")
        }
        _ = register(wake, events: UInt32(HTTPDNS_PROXY_READABLE), .wake)
        for listener in listeners {
            _ = register(listener, events: UInt32(HTTPDNS_PROXY_READABLE), .listener(listener))
        }
    }

    /// Starts the loop thread.
    func start() {
        let thread = Thread { [self] in run() }
        thread.name = "httpdns-proxy"
        thread.stackSize = 1 << 20
        self.thread = thread
        thread.start()
    }

    /// Runs `work` on the loop thread, soon.
    func execute(_ work: @escaping @Sendable () -> Void) {
        let first = inbox.withLock { queue -> Bool in
            queue.append(work)
            return queue.count == 1
        }
        if first {
            var one: UInt64 = 1
            _ = write(wake, &one, 8)
        }
    }

    /// Closes the listeners and every connection, then ends the thread.
    func stop() {
        execute { [self] in running = false }
    }

    // MARK: - The loop

    private func run() {
        // splice(2) into a socket whose peer has gone raises SIGPIPE (send takes MSG_NOSIGNAL, splice
        // has no such flag), which would end an app that keeps the default action. Blocked on this
        // thread, it stays pending here and the call fails with EPIPE instead.
        var pipeSignal = sigset_t()
        sigemptyset(&pipeSignal)
        sigaddset(&pipeSignal, SIGPIPE)
        pthread_sigmask(SIG_BLOCK, &pipeSignal, nil)
        var events = [httpdns_proxy_event](repeating: httpdns_proxy_event(), count: 256)
        while running {
            let timeout: Int32 = connections.isEmpty ? -1 : 50
            let count = events.withUnsafeMutableBufferPointer { httpdns_proxy_epoll_wait(epoll, $0.baseAddress, 256, timeout) }
            if count < 0, errno != EINTR { break }
            for index in 0..<max(0, Int(count)) {
                let event = events[index]
                guard let registration = registrations[event.token] else { continue }
                dispatch(registration, events: event.events)
            }
            let now = httpdns_proxy_now()
            if now &- lastScan >= 50_000_000 {
                lastScan = now
                scanDeadlines(now: now)
            }
        }
        shutdown()
    }

    private func dispatch(_ registration: Registration, events: UInt32) {
        switch registration {
        case .listener(let fd):
            acceptAll(fd)
        case .wake:
            var value: UInt64 = 0
            _ = read(wake, &value, 8)
            let work = inbox.withLock { queue -> [@Sendable () -> Void] in
                defer { queue.removeAll(keepingCapacity: true) }
                return queue
            }
            for item in work { item() }
        case .client(let connection):
            connection.clientEvent(events)
        case .upstream(let connection):
            connection.upstreamEvent(events)
        case .attempt(let attempt):
            attempt.finished(events: events)
        }
    }

    private func acceptAll(_ listener: Int32) {
        while true {
            let fd = httpdns_proxy_accept(listener)
            if fd < 0 { return }  // EAGAIN, or EMFILE: the next readiness retries
            ProxySocket.setNoDelay(fd)
            let id = nextConnectionID
            nextConnectionID += 1
            let connection = ProxyConnection(id: id, client: fd, loop: self, now: httpdns_proxy_now())
            if connections.count >= settings.configuration.maxConnections {
                settings.connector.monitor.proxyRefused(status: 503, reason: "too many connections")
                connection.refuse(status: 503, reason: "too many connections")
                continue
            }
            connections[id] = connection
            connection.begin()
        }
    }

    private func scanDeadlines(now: UInt64) {
        for connection in Array(connections.values) { connection.checkDeadlines(now: now) }
    }

    private func shutdown() {
        for connection in Array(connections.values) { connection.close() }
        for listener in listeners { close(listener) }
        close(wake)
        close(epoll)
        // Work handed over after the stop still runs, so that waiting attempts are resumed.
        let late = inbox.withLock { queue -> [@Sendable () -> Void] in
            defer { queue.removeAll() }
            return queue
        }
        for item in late { item() }
        thread = nil
    }

    // MARK: - Registrations (loop thread)

    func register(_ fd: Int32, events: UInt32, _ registration: Registration) -> UInt64 {
        let token = nextToken
        nextToken += 1
        registrations[token] = registration
        if httpdns_proxy_epoll_control(epoll, 0, fd, events, token) != 0 {
            registrations[token] = nil
            return 0
        }
        return token
    }

    func modify(_ fd: Int32, token: UInt64, events: UInt32) {
        _ = httpdns_proxy_epoll_control(epoll, 1, fd, events, token)
    }

    func deregister(_ fd: Int32, token: UInt64) {
        guard token != 0, registrations.removeValue(forKey: token) != nil else { return }
        _ = httpdns_proxy_epoll_control(epoll, 2, fd, 0, token)
    }

    func connectionClosed(_ id: UInt64) {
        connections[id] = nil
    }

    // MARK: - Upstream connects

    /// Connects `address`:`port` for connection `id` on the loop, within the connect timeout;
    /// on success the connection takes the socket over before this returns.
    func attempt(id: UInt64, address: HTTPDNSIPAddress, port: UInt16, attempt number: Int) async -> ProxyConnector.AttemptResult {
        await withCheckedContinuation { continuation in
            execute { [self] in
                guard running, let connection = connections[id], connection.isConnecting else {
                    continuation.resume(returning: .gone)
                    return
                }
                let attempt = ProxyConnectAttempt(
                    connection: connection, address: address, port: port, number: number,
                    deadline: httpdns_proxy_now() + ProxyLoop.nanoseconds(settings.configuration.connectTimeout)
                ) { continuation.resume(returning: $0) }
                attempt.start(loop: self)
            }
        }
    }

    static func nanoseconds(_ duration: Duration) -> UInt64 {
        let (seconds, attoseconds) = duration.components
        return UInt64(max(0, seconds)) * 1_000_000_000 + UInt64(max(0, attoseconds) / 1_000_000_000)
    }

    /// No address connected: answer the client.
    func connectFailed(id: UInt64, failure: ProxyConnector.Failure) {
        guard let connection = connections[id], connection.isConnecting else { return }
        connection.connectFailed(failure)
    }
}

/// One non-blocking connect in flight, owned by its connection until it ends.
final class ProxyConnectAttempt {
    weak var connection: ProxyConnection?
    let address: HTTPDNSIPAddress
    let port: UInt16
    let number: Int
    let deadline: UInt64
    /// Called once with the outcome (on the loop thread).
    private var deliver: ((ProxyConnector.AttemptResult) -> Void)?
    private var fd: Int32 = -1
    private var token: UInt64 = 0
    private weak var loop: ProxyLoop?

    init(
        connection: ProxyConnection, address: HTTPDNSIPAddress, port: UInt16, number: Int, deadline: UInt64,
        deliver: @escaping (ProxyConnector.AttemptResult) -> Void
    ) {
        self.connection = connection
        self.address = address
        self.port = port
        self.number = number
        self.deadline = deadline
        self.deliver = deliver
    }

    func start(loop: ProxyLoop) {
        self.loop = loop
        switch ProxySocket.connect(address, port: port) {
        case .connected(let socket):
            fd = socket
            succeed()
        case .inProgress(let socket):
            fd = socket
            connection?.pendingAttempt = self
            token = loop.register(socket, events: UInt32(HTTPDNS_PROXY_WRITABLE), .attempt(self))
            if token == 0 { fail(.cannotConnectToHost, "epoll: \(ProxySocket.errorText(errno))") }
        case .failed(let code):
            fail(code == ETIMEDOUT ? .timedOut : .cannotConnectToHost, ProxySocket.errorText(code))
        }
    }

    /// The socket became writable (or failed): the connect is over.
    func finished(events: UInt32) {
        let code = ProxySocket.pendingError(fd)
        loop?.deregister(fd, token: token)
        token = 0
        if code == 0 {
            succeed()
        } else {
            fail(code == ETIMEDOUT ? .timedOut : .cannotConnectToHost, ProxySocket.errorText(code))
        }
    }

    func timedOut() {
        loop?.deregister(fd, token: token)
        token = 0
        fail(.timedOut, "connect timed out")
    }

    /// The connection went away: drop the socket and stop the connector.
    func abandon() {
        loop?.deregister(fd, token: token)
        token = 0
        if fd >= 0 { close(fd) }
        fd = -1
        resume(.gone)
    }

    private func succeed() {
        let socket = fd
        fd = -1
        guard let connection, connection.isConnecting else {
            close(socket)
            resume(.gone)
            return
        }
        connection.pendingAttempt = nil
        connection.upstreamConnected(socket, address: address, attempts: number)
        resume(.connected)
    }

    private func fail(_ code: HTTPTransportError.Code, _ detail: String) {
        if fd >= 0 { close(fd) }
        fd = -1
        if connection?.pendingAttempt === self { connection?.pendingAttempt = nil }
        resume(.failed(HTTPTransportError(code, detail, host: connection?.target?.host, attemptedAddress: address)))
    }

    private func resume(_ result: ProxyConnector.AttemptResult) {
        let deliver = self.deliver
        self.deliver = nil
        deliver?(result)
    }
}
