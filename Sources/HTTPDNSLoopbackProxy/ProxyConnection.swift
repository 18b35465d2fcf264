import CHTTPDNSProxy
import Foundation
import HTTPDNSCore
import HTTPDNSDirect
import HTTPDNSTransport

/// One client connection, from its request head to the end of its tunnel (loop thread only): the
/// I/O of a ``ProxyConnectionStateMachine``, which makes every decision.
///
/// Phases: read the head (within the head deadline) → check the credential and target → connect
/// (an IP literal or a fresh cached answer right here; otherwise a ``ProxyConnector`` task picks
/// addresses and the loop connects each) → relay both ways with two ``ProxyPump``s until both ends
/// close or the idle limit passes. Refusals are answered with a status and `Connection: close`,
/// then the connection drains briefly so the answer is not lost to a reset.
///
/// Here are the sockets, their registrations with the ``ProxyLoop`` and the calls on them; each
/// event goes to the state machine, and the ``ProxyConnectionStateMachine/Action`` it returns is
/// performed by ``perform(_:)``. Both sockets are registered once, edge-triggered; the state machine
/// keeps what their events said, and the pumps clear it when a call would block.
final class ProxyConnection {
    typealias StateMachine = ProxyConnectionStateMachine

    let id: UInt64
    let client: Int32
    // The loop outlives its connections (it closes them all before it ends).
    private unowned(unsafe) let loop: ProxyLoop
    private var machine: StateMachine
    /// The client socket's token in the loop's epoll set: 0 before ``begin()`` and after the close.
    private var clientToken: UInt64 = 0

    init(id: UInt64, client: Int32, loop: ProxyLoop, now: UInt64) {
        self.id = id
        self.client = client
        self.loop = loop
        self.machine = StateMachine(client: client, acceptedAt: now, rules: loop.settings.rules)
    }

    var isConnecting: Bool { machine.isConnecting }
    var isAttempting: Bool { machine.isAttempting }

    private var monitor: any HTTPDNSProxyMonitor { loop.settings.monitor }

    /// Starts reading the request head.
    func begin() {
        clientToken = loop.register(client, .client(self))
        if clientToken == 0 { perform(machine.proxyStopped()) }
    }

    // MARK: - Events

    func clientEvent(_ events: UInt32) {
        perform(machine.clientEvent(StateMachine.Edges(events), now: loop.now, pump: runPumps))
    }

    func upstreamEvent(_ events: UInt32) {
        perform(machine.upstreamEvent(StateMachine.Edges(events), now: loop.now, pump: runPumps))
    }

    /// Deadlines: the request head, the connect attempt, idleness, the drain after a refusal.
    func checkDeadlines(now: UInt64) {
        perform(machine.checkDeadlines(now: now, unread: ProxySocket.hasUnreadBytes))
    }

    /// Connects `address`:`port` for the connector (its `number`-th address); `deliver` hears how it ended.
    func startAttempt(address: HTTPDNSIPAddress, port: UInt16, number: Int, deliver: @escaping (ProxyConnector.AttemptResult) -> Void) {
        perform(machine.attemptRequested(address: address, port: port, number: number, deliver: deliver, now: loop.now))
    }

    /// No address connected.
    func connectFailed(_ failure: ProxyConnector.Failure) {
        perform(machine.connectorFailed(failure, now: loop.now))
    }

    /// Refuses a connection that was never admitted (over the limit): one write, then close.
    func refuse(status: Int, reason: String) {
        let bytes = ProxyReply.bytes(status: status, reason: reason)
        _ = bytes.withUnsafeBytes { send(client, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        Glibc.close(client)
        machine.refusedAtAdmission()
    }

    /// The proxy drains: closes now when nothing is in flight, otherwise once the exchange is over.
    func drain(now: UInt64) {
        perform(machine.proxyDraining(now: now, unread: ProxySocket.hasUnreadBytes))
    }

    /// Closes both sockets and forgets the connection.
    func close() {
        perform(machine.proxyStopped())
    }

    // MARK: - Actions

    private func perform(_ action: consuming StateMachine.Action) {
        switch consume action {
        case .none:
            break
        case .readHead:
            readHead()
        case .connect(let plan):
            connect(plan)
        case .startConnector(let host, let port, let cooling, let closing):
            closeUpstream(closing)
            if let cooling {
                // The fast path's address came from a fresh cached answer: the host is a protected one.
                loop.settings.connector.failover.connectFailed(
                    cooling.address, error: cooling.error, reportingAs: (HTTPDNSHostPolicy.normalize(host), Int(port)))
            }
            startConnector(host: host, port: port)
        case .deliver(let deliver, let result, let closing):
            closeUpstream(closing)
            deliver(result)
        case .readConnectError(let socket):
            // Refused or unreachable: the socket's pending error says which.
            let code = ProxySocket.pendingError(socket)
            perform(machine.attemptFailed(
                code == ETIMEDOUT ? .timedOut : .cannotConnectToHost, ProxySocket.errorText(code == 0 ? ECONNREFUSED : code),
                now: loop.now))
        case .startRelay(let opened, let deliver):
            monitor.proxyTunnelOpened(host: opened.host, port: opened.port, address: opened.address, attempts: opened.attempts)
            perform(machine.relay(now: loop.now, runPumps))
            deliver?(.connected)
        case .watch(let clientInterest, let upstream):
            if let clientInterest { loop.modify(client, token: clientToken, events: clientInterest.events) }
            if case let (socket, interest)? = upstream { loop.modify(socket.socket, token: socket.token, events: interest.events) }
        case .release(let release):
            self.release(release)
        case .respond(let response):
            respond(response)
        case .drain:
            drain()
        case .close(let release):
            self.release(release)
            loop.forget(clientToken)
            clientToken = 0
            Glibc.close(client)
            loop.connectionClosed(id)
        }
    }

    // MARK: - Request head

    /// Reads until the head is complete, the socket is drained or the client has gone.
    private func readHead() {
        while let room = machine.headRoom(scratch: loop.scratch.count) {
            let count = recv(client, loop.scratch.baseAddress, room, 0)
            if count < 0 {
                if errno == EINTR { continue }
                if errno == EAGAIN {
                    machine.headDrained()
                    return
                }
                perform(machine.clientHungUp())
                return
            }
            if count == 0 {
                perform(machine.clientHungUp())
                return
            }
            let bytes = UnsafeRawBufferPointer(rebasing: loop.scratch[0..<count])
            perform(machine.headBytesRead(bytes, short: count < room, now: loop.now, cachedAddress: cachedAddress))
        }
    }

    /// The fast path for a name: a protected host with a fresh cached answer (the engine's
    /// synchronous cache look, which never waits) is connected right here without a task. If that
    /// first address fails it cools down and the connector takes over, trying it last.
    private func cachedAddress(_ target: ProxyRequestHead.Target) -> HTTPDNSIPAddress? {
        let failover = loop.settings.connector.failover
        let engine = failover.engine
        guard engine.protects(target.host), let answer = engine.cachedAnswer(target.host) else { return nil }
        // A host with remembered block-redirect addresses is the connector's (sticky redirect).
        guard failover.redirectedAddresses(for: HTTPDNSHostPolicy.normalize(target.host)) == nil else { return nil }
        return answer.addresses.first { loop.settings.policy.allows($0, port: target.port) }
    }

    // MARK: - Connecting

    /// The whole choice (resolution, failover) as a task; it hands each connect back to the loop.
    private func startConnector(host: String, port: UInt16) {
        let connector = loop.settings.connector
        let (id, policy, loop) = (self.id, loop.settings.policy, self.loop)
        Task { await connector.connect(id: id, host: host, port: port, policy: policy, loop: loop) }
    }

    /// Starts a non-blocking connect and tells the state machine how it started.
    private func connect(_ plan: StateMachine.AttemptPlan) {
        let start: StateMachine.ConnectStart
        switch ProxySocket.connect(plan.address, port: plan.port) {
        case .connected(let socket):
            let token = loop.register(socket, .upstream(self))
            start = token != 0 ? .connected(.init(socket: socket, token: token)) : Self.unwatched(socket)
        case .inProgress(let socket):
            let token = loop.register(socket, .upstream(self))
            start = token != 0 ? .inProgress(.init(socket: socket, token: token)) : Self.unwatched(socket)
        case .failed(let code):
            start = .failed(code == ETIMEDOUT ? .timedOut : .cannotConnectToHost, ProxySocket.errorText(code), socket: nil)
        }
        perform(machine.attemptStarted(plan, start, now: loop.now))
    }

    /// A connected socket the loop could not watch (errno from `epoll_ctl`).
    private static func unwatched(_ socket: Int32) -> StateMachine.ConnectStart {
        .failed(.cannotConnectToHost, "epoll: \(ProxySocket.errorText(errno))", socket: .init(socket: socket, token: 0))
    }

    // MARK: - Relaying

    /// Runs both pumps as far as the edges seen allow (a pump with nothing known to do makes no
    /// call); returns whether a byte moved. The state machine hands it the pumps in place.
    private func runPumps(_ toServer: inout ProxyPump, _ toClient: inout ProxyPump) -> Bool {
        let upLast = toClient.finished
        let up = toServer.run(loop: loop, closing: upLast)
        // Only a connection whose both ends are over lets the close carry the end: a forwarded
        // response may end while the client still sends, and a close over unread bytes resets the
        // connection, which would drop what is still queued. There the end goes out first.
        let downLast = toServer.finished
        let down = toClient.run(loop: loop, closing: downLast)
        return up || down
    }

    // MARK: - Answers

    /// Lets go of what the state held, reports, then sends the answer and drains (or closes).
    private func respond(_ response: StateMachine.Response) {
        release(response.release)
        if let failed = response.failedAddress {
            monitor.connectionFailed(address: failed.address, error: failed.error.urlError)
        }
        switch response.report {
        case .refused(let status, let reason):
            monitor.proxyRefused(status: status, reason: reason)
        case .tunnelFailed(let host, let port, let status, let reason):
            monitor.proxyTunnelFailed(host: host, port: port, status: status, reason: reason)
        }
        if clientToken == 0 {
            clientToken = loop.register(client, .client(self))
        } else if response.rewatchClient {
            loop.modify(client, token: clientToken, events: ProxyLoop.socketEvents)
        }
        if response.drain {
            drain()
        } else {
            if let reply = machine.unsentReply {
                _ = reply.withUnsafeBytes { send(client, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            }
            perform(machine.replyFlushed())
        }
    }

    /// Sends the rest of the answer, then reads and drops until the client's end (each client edge
    /// calls it again).
    private func drain() {
        if let reply = machine.unsentReply {
            let count = reply.withUnsafeBytes { send(client, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if count < 0, errno != EAGAIN, errno != EINTR {
                perform(machine.clientHungUp())
                return
            }
            if count > 0 { machine.replySent(count) }
            // Not all taken: the next writable edge brings the connection back here.
            if machine.unsentReply != nil { return }
            Glibc.shutdown(client, Int32(SHUT_WR))
        }
        while true {
            let count = recv(client, loop.scratch.baseAddress, loop.scratch.count, 0)
            if count > 0 { continue }
            if count < 0, errno == EAGAIN { return }
            if count < 0, errno == EINTR { continue }
            perform(machine.clientHungUp())
            return
        }
    }

    // MARK: - Closing

    /// Tells a waiting connector it is over, closes the upstream socket (the close takes it out of
    /// the epoll set), reports the tunnel's end and gives its pipes back.
    private func release(_ release: StateMachine.Release) {
        release.deliverGone?(.gone)
        closeUpstream(release.upstream)
        if let tunnel = release.tunnel {
            monitor.proxyTunnelClosed(
                host: tunnel.target.host, port: tunnel.target.port, bytesToServer: tunnel.bytesToServer, bytesToClient: tunnel.bytesToClient)
            if let spent = tunnel.toServerPipe { loop.recycle(spent.pipe, empty: spent.empty) }
            if let spent = tunnel.toClientPipe { loop.recycle(spent.pipe, empty: spent.empty) }
        }
    }

    private func closeUpstream(_ upstream: StateMachine.Upstream?) {
        guard let upstream else { return }
        loop.forget(upstream.token)
        Glibc.close(upstream.socket)
    }
}

extension ProxyConnectionStateMachine.Edges {
    private static var readableBits: UInt32 { UInt32(HTTPDNS_PROXY_READABLE | HTTPDNS_PROXY_PEER_CLOSED | HTTPDNS_PROXY_HANGUP | HTTPDNS_PROXY_ERROR) }
    private static var writableBits: UInt32 { UInt32(HTTPDNS_PROXY_WRITABLE | HTTPDNS_PROXY_HANGUP | HTTPDNS_PROXY_ERROR) }
    private static var hungUpBits: UInt32 { UInt32(HTTPDNS_PROXY_PEER_CLOSED | HTTPDNS_PROXY_HANGUP | HTTPDNS_PROXY_ERROR) }
    private static var failedBits: UInt32 { UInt32(HTTPDNS_PROXY_HANGUP | HTTPDNS_PROXY_ERROR) }

    /// What an epoll event's bits say.
    init(_ events: UInt32) {
        self.init(
            readable: events & Self.readableBits != 0, writable: events & Self.writableBits != 0,
            hungUp: events & Self.hungUpBits != 0, failed: events & Self.failedBits != 0)
    }
}

extension ProxyConnectionStateMachine.Interest {
    /// The epoll interest bits.
    var events: UInt32 {
        switch self {
        case .all: ProxyLoop.socketEvents
        case .writeOnly: ProxyLoop.writeOnlyEvents
        }
    }
}
