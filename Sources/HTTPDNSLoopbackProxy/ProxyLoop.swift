import CHTTPDNSProxy
import Foundation
import HTTPDNSCore
import HTTPDNSTransport
import Synchronization

/// One of the proxy's event loops: one thread, one epoll set, every socket non-blocking.
///
/// A proxy runs a few loops (``defaultCount``) over the same listening sockets, each registered
/// with EPOLLEXCLUSIVE so that a new client wakes one loop, which then owns the connection for its
/// whole life. Several loops let a machine's cores relay at once; none shares a connection.
///
/// Client and upstream sockets are registered once, edge-triggered, for reading, writing and the
/// peer's close, and stay so until they are closed (closing removes them from the set): a short
/// tunnel costs two `epoll_ctl` calls, whatever its phases. Each connection keeps what the edges
/// said (readable, writable, hung up) and clears it when a call would block. The listeners and the
/// eventfd are level-triggered; when an accept fails for want of descriptors, the listeners leave
/// the loop's set for ``acceptPause`` rather than wake it at once for the same queued client.
///
/// A drain (``drain(within:ended:)``) takes the listeners out of every loop's set for good, after
/// taking the clients already queued (``ProxyListeners/refuseNew()`` keeps new ones out first), and
/// the last loop to let go of them closes them; each loop then runs until its connections have
/// closed — each closes once it has nothing in flight (``ProxyConnectionStateMachine/proxyDraining(now:unread:)``)
/// — or until the drain's deadline, when it closes the rest and counts them.
///
/// Everything but ``execute(_:)``, ``attempt(id:address:port:attempt:)``, ``drain(within:ended:)``
/// and ``stop()`` runs on the loop thread only (the `@unchecked Sendable` below rests on that): the
/// registrations, the connections, their pumps, the scratch buffer and the pipe pool are never
/// touched from elsewhere. Other threads hand work over through the inbox and an eventfd.
final class ProxyLoop: @unchecked Sendable {
    /// What a token in the epoll set stands for.
    enum Registration {
        case listener(Int32)
        case wake
        case client(ProxyConnection)
        case upstream(ProxyConnection)
    }

    /// The interest of every client and upstream socket, for its whole life but one case: while
    /// the bytes read from a socket wait for the other side to take them (a bulk transfer faster
    /// than its reader), ``writeOnlyEvents``, so that each segment arriving does not wake the loop
    /// for nothing.
    static let socketEvents = UInt32(HTTPDNS_PROXY_READABLE | HTTPDNS_PROXY_WRITABLE | HTTPDNS_PROXY_PEER_CLOSED) | HTTPDNS_PROXY_EDGE
    static let writeOnlyEvents = UInt32(HTTPDNS_PROXY_WRITABLE) | HTTPDNS_PROXY_EDGE

    /// Most empty pipes kept for the next tunnels that reach the splice threshold.
    static let pooledPipes = 32

    /// How long the listeners stay out of a loop's set when the process is out of descriptors.
    static let acceptPause: UInt64 = 100_000_000
    /// How long a drain goes on accepting after refusing new clients (nanoseconds): a round trip
    /// for a client whose SYN was answered to complete its handshake (see ``stopAccepting()``).
    static let handshakeGrace: UInt64 = 200_000_000

    /// Loops per proxy: one per CPU the process may run on, at most 4 (a loopback proxy seldom needs
    /// more; each loop is a thread).
    static let defaultCount = max(1, min(HTTPDNSProcessors.usable, 4))

    let settings: ProxySettings
    private let epoll: Int32
    private let wake: Int32
    private let listeners: ProxyListeners
    /// Work handed over from other threads; `ended` once the loop has run its last, after which
    /// work runs on the thread that hands it over (see ``execute(_:)``).
    private let inbox = HTTPDNSLock<(work: [@Sendable () -> Void], ended: Bool)>(([], false))

    // Loop-confined state.
    private var registrations: [UInt64: Registration] = [:]
    private var nextToken: UInt64 = 1
    private var connections: [UInt64: ProxyConnection] = [:]
    private var nextConnectionID: UInt64 = 1
    private var running = true
    private var lastScan: UInt64 = 0
    /// The listeners' tokens while they are in the set; empty while accepting is paused.
    private var listenerTokens: [Int32: UInt64] = [:]
    /// Set while the process is out of descriptors: when the listeners go back into the set.
    private var acceptPausedUntil: UInt64?
    /// This loop took the listeners out of its set for good and told ``listeners`` so (drain or end).
    private var listenersReleased = false
    /// The drain's handshake grace ends then: the listeners are released.
    private var handshakeGraceUntil: UInt64?
    /// Set while draining: when the connections still open are cut.
    private var drainDeadline: UInt64?
    /// Hears, once the loop has ended, how many connections the drain cut.
    private var drainEnded: (@Sendable (Int) -> Void)?
    /// The monotonic time when the loop last woke (nanoseconds): precise enough for every deadline
    /// here, and read once per wake-up instead of once per use.
    private(set) var now = httpdns_proxy_now()
    private var thread: Thread?
    private var pipes: [ProxyPipe] = []
    /// Scratch buffer for bytes that go through user space (request and response heads, short tunnels).
    let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 16)

    init(settings: ProxySettings, listeners: ProxyListeners) throws(HTTPDNSProxyError) {
        self.settings = settings
        self.listeners = listeners
        epoll = httpdns_proxy_epoll_create()
        wake = httpdns_proxy_eventfd()
        guard epoll >= 0, wake >= 0 else {
            let code = errno
            if epoll >= 0 { close(epoll) }
            if wake >= 0 { close(wake) }
            scratch.deallocate()
            throw HTTPDNSProxyError(.cannotListen, "epoll/eventfd: \(ProxySocket.errorText(code))")
        }
        _ = register(wake, events: UInt32(HTTPDNS_PROXY_READABLE), .wake)
        resumeAccepting()
    }

    deinit {
        scratch.deallocate()
    }

    /// Releases a loop that never started (another loop of the proxy could not be made).
    func discard() {
        close(wake)
        close(epoll)
        listeners.release()
    }

    /// Starts the loop thread.
    func start(name: String) {
        let thread = Thread { [self] in run() }
        thread.name = name
        thread.stackSize = 1 << 20
        self.thread = thread
        thread.start()
    }

    /// Runs `work` on the loop thread, soon; once the loop has ended, at once on this thread (the
    /// loop's state is then final, and the lock orders the reads after the loop's last writes), so
    /// that work handed over late — a connector's attempt, a drain — still finds `running` false
    /// and answers, and no wake-up goes to an eventfd that was closed.
    func execute(_ work: @escaping @Sendable () -> Void) {
        let wakeUp = inbox.withLock { inbox -> Bool? in
            guard !inbox.ended else { return nil }
            inbox.work.append(work)
            return inbox.work.count == 1
        }
        guard let wakeUp else { return work() }
        if wakeUp {
            var one: UInt64 = 1
            _ = write(wake, &one, 8)
        }
    }

    /// Closes the listeners and every connection, then ends the thread.
    func stop() {
        // Written only while the loop runs: once it has ended, `execute` runs this elsewhere.
        execute { [self] in if running { running = false } }
    }

    /// Stops accepting at once, lets the connections finish what they have in flight for at most
    /// `timeout` nanoseconds, closes the rest, then ends the thread; `ended` hears, on the loop
    /// thread once it has closed everything, how many connections were cut at the timeout.
    func drain(within timeout: UInt64, ended: @escaping @Sendable (Int) -> Void) {
        execute { [self] in
            // Stopped already (work handed over late runs in `shutdown`): nothing left to cut.
            guard running, drainDeadline == nil else { return ended(0) }
            now = httpdns_proxy_now()
            drainDeadline = now &+ timeout
            drainEnded = ended
            for connection in Array(connections.values) { connection.drain(now: now) }
            // Clients accepted from here on drain from their start (acceptOne).
            stopAccepting()
        }
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
        let events = UnsafeMutableBufferPointer<httpdns_proxy_event>.allocate(capacity: 256)
        defer { events.deallocate() }
        while running {
            let timeout: Int32 = connections.isEmpty && acceptPausedUntil == nil && handshakeGraceUntil == nil ? -1 : 50
            let count = httpdns_proxy_epoll_wait(epoll, events.baseAddress, 256, timeout)
            if count < 0, errno != EINTR { break }
            now = httpdns_proxy_now()
            for index in 0..<max(0, Int(count)) {
                let event = events[index]
                guard let registration = registrations[event.token] else { continue }
                dispatch(registration, events: event.events)
            }
            if let until = acceptPausedUntil, now >= until {
                resumeAccepting()
            }
            if let until = handshakeGraceUntil, now >= until {
                releaseListeners()
            }
            if now &- lastScan >= 50_000_000 {
                lastScan = now
                scanDeadlines(now: now)
            }
            if let deadline = drainDeadline, handshakeGraceUntil == nil || now >= deadline, connections.isEmpty || now >= deadline {
                running = false
            }
        }
        shutdown()
    }

    private func dispatch(_ registration: Registration, events: UInt32) {
        switch registration {
        case .listener(let fd):
            acceptOne(fd)
        case .wake:
            var value: UInt64 = 0
            _ = read(wake, &value, 8)
            let work = inbox.withLock { inbox -> [@Sendable () -> Void] in
                defer { inbox.work.removeAll(keepingCapacity: true) }
                return inbox.work
            }
            for item in work { item() }
        case .client(let connection):
            connection.clientEvent(events)
        case .upstream(let connection):
            connection.upstreamEvent(events)
        }
    }

    /// Accepts one client per readiness: the listener is level-triggered, so a backlog wakes a loop
    /// again at once (with whatever else is ready), and no call is spent finding the queue empty.
    /// Returns whether a client was taken (and served or refused).
    @discardableResult
    private func acceptOne(_ listener: Int32) -> Bool {
        // TCP_NODELAY comes from the listener (Linux copies it to accepted sockets).
        let fd = httpdns_proxy_accept(listener)
        if fd < 0 {
            // EAGAIN: another loop took it. Out of descriptors or memory, the queue stays readable
            // and would wake the loop at once, again and again: the listeners leave the set a moment.
            let code = errno
            if code == EMFILE || code == ENFILE || code == ENOBUFS || code == ENOMEM { pauseAccepting() }
            return false
        }
        assert(ProxySocket.hasNoDelay(fd), "accepted sockets no longer inherit TCP_NODELAY from the listener")
        let id = nextConnectionID
        nextConnectionID += 1
        let connection = ProxyConnection(id: id, client: fd, loop: self, now: now)
        guard settings.admit() else {
            settings.monitor.proxyRefused(status: 503, reason: "too many connections")
            connection.refuse(status: 503, reason: "too many connections")
            return true
        }
        connections[id] = connection
        connection.begin()
        if drainDeadline != nil { connection.drain(now: now) }
        return true
    }

    /// The drain's first step: no new client gets in (a SYN is dropped), the clients already
    /// queued (their connect done, maybe their request sent) are taken, and so are those whose
    /// handshake the kernel had answered, for ``handshakeGrace``; then the listeners leave this
    /// loop's set for good (``releaseListeners()``).
    private func stopAccepting() {
        guard !listenersReleased, handshakeGraceUntil == nil else { return }
        listeners.refuseNew()
        for fd in listeners.fds {
            while acceptOne(fd) {}
        }
        if acceptPausedUntil != nil { resumeAccepting() }
        handshakeGraceUntil = now &+ Self.handshakeGrace
    }

    private func releaseListeners() {
        handshakeGraceUntil = nil
        guard !listenersReleased else { return }
        for fd in listeners.fds {
            while acceptOne(fd) {}
        }
        for (fd, token) in listenerTokens {
            _ = httpdns_proxy_epoll_control(epoll, 2, fd, 0, 0)
            forget(token)
        }
        listenerTokens = [:]
        acceptPausedUntil = nil
        listenersReleased = true
        listeners.release()
    }

    private func pauseAccepting() {
        for (fd, token) in listenerTokens {
            _ = httpdns_proxy_epoll_control(epoll, 2, fd, 0, 0)
            forget(token)
        }
        listenerTokens = [:]
        acceptPausedUntil = now &+ Self.acceptPause
    }

    /// Puts the listeners (back) into the set; one the kernel refuses is tried again after a pause.
    private func resumeAccepting() {
        guard !listenersReleased else { return }
        for fd in listeners.fds where listenerTokens[fd] == nil {
            let token = register(fd, events: UInt32(HTTPDNS_PROXY_READABLE) | HTTPDNS_PROXY_EXCLUSIVE, .listener(fd))
            if token != 0 { listenerTokens[fd] = token }
        }
        acceptPausedUntil = listenerTokens.count == listeners.fds.count ? nil : now &+ Self.acceptPause
    }

    private func scanDeadlines(now: UInt64) {
        for connection in Array(connections.values) { connection.checkDeadlines(now: now) }
    }

    private func shutdown() {
        // Whatever a drain left open had something in flight: it is cut, and counted.
        let cut = drainDeadline == nil ? 0 : connections.count
        for connection in Array(connections.values) { connection.close() }
        if !listenersReleased {
            listenersReleased = true
            listeners.release()
        }
        for pipe in pipes {
            close(pipe.read)
            close(pipe.write)
        }
        pipes = []
        // Work handed over after the stop still runs, so that waiting attempts are resumed; from
        // here on `execute` runs it at once.
        let late = inbox.withLock { inbox -> [@Sendable () -> Void] in
            defer {
                inbox.work.removeAll()
                inbox.ended = true
            }
            return inbox.work
        }
        close(wake)
        close(epoll)
        for item in late { item() }
        thread = nil
        drainEnded?(cut)
        drainEnded = nil
    }

    // MARK: - Registrations (loop thread)

    /// Adds `fd` to the epoll set; returns its token, 0 when the kernel refused.
    func register(_ fd: Int32, events: UInt32 = ProxyLoop.socketEvents, _ registration: Registration) -> UInt64 {
        let token = nextToken
        nextToken += 1
        registrations[token] = registration
        if httpdns_proxy_epoll_control(epoll, 0, fd, events, token) != 0 {
            registrations[token] = nil
            return 0
        }
        return token
    }

    /// Changes the interest of a registered `fd`.
    func modify(_ fd: Int32, token: UInt64, events: UInt32) {
        _ = httpdns_proxy_epoll_control(epoll, 1, fd, events, token)
    }

    /// Forgets a token whose socket is about to be closed: the close takes it out of the epoll set
    /// (no `EPOLL_CTL_DEL` needed), and an event still queued for it is dropped, as tokens are never reused.
    func forget(_ token: UInt64) {
        if token != 0 { registrations[token] = nil }
    }

    func connectionClosed(_ id: UInt64) {
        if connections.removeValue(forKey: id) != nil { settings.release() }
    }

    // MARK: - Pipes (loop thread)

    /// An empty pipe from the pool, or a new one; nil when the process is out of descriptors.
    func takePipe() -> ProxyPipe? {
        if let pipe = pipes.popLast() { return pipe }
        var fds: [Int32] = [-1, -1]
        guard httpdns_proxy_pipe(&fds, 0) == 0 else { return nil }
        return ProxyPipe(read: fds[0], write: fds[1])
    }

    /// Keeps an empty pipe of the default size for the next tunnel; closes any other.
    func recycle(_ pipe: ProxyPipe, empty: Bool) {
        if empty, running, pipes.count < Self.pooledPipes {
            pipes.append(pipe)
        } else {
            close(pipe.read)
            close(pipe.write)
        }
    }

    // MARK: - Upstream connects

    /// Connects `address`:`port` for connection `id` on the loop, within the connect timeout;
    /// on success the connection takes the socket over before this returns.
    func attempt(id: UInt64, address: HTTPDNSIPAddress, port: UInt16, attempt number: Int) async -> ProxyConnector.AttemptResult {
        await withCheckedContinuation { continuation in
            execute { [self] in
                guard running, let connection = connections[id], connection.isConnecting, !connection.isAttempting else {
                    continuation.resume(returning: .gone)
                    return
                }
                connection.startAttempt(address: address, port: port, number: number) { continuation.resume(returning: $0) }
            }
        }
    }

    /// No address connected: answer the client.
    func connectFailed(id: UInt64, failure: ProxyConnector.Failure) {
        guard let connection = connections[id], connection.isConnecting else { return }
        connection.connectFailed(failure)
    }
}

/// The listening sockets every loop of a proxy watches; closed when the last loop has let go of
/// them (at its drain or its end), so that no loop ever accepts on a descriptor number that was
/// closed and given to something else.
final class ProxyListeners: Sendable {
    let fds: [Int32]
    private let holders: Atomic<Int>
    private let refusing = Atomic<Bool>(false)

    init(fds: [Int32], loops: Int) {
        self.fds = fds
        holders = Atomic(loops)
    }

    /// From now on no new client enters the listen queues (see `httpdns_proxy_refuse_new`): closing
    /// a listener resets the clients still queued, whose requests may be sent already, so a drain
    /// first keeps new ones out, then takes every queued one, then closes. Once per proxy; a loop
    /// that finds it done by another takes the queue after it, which is still before the close,
    /// as that needs every loop's ``release()``.
    func refuseNew() {
        guard refusing.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged else { return }
        // Should a kernel have no socket filters, the drain still works, with the race this closes:
        // a client queued between a loop's last accept and the close is reset.
        for fd in fds { _ = httpdns_proxy_refuse_new(fd) }
    }

    /// One loop let go of the listeners for good; the last one closes them.
    func release() {
        let (_, left) = holders.subtract(1, ordering: .acquiringAndReleasing)
        if left == 0 {
            for fd in fds { close(fd) }
        }
    }
}
