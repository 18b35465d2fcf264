import CHTTPDNSProxy
import Foundation
import HTTPDNSCore
import HTTPDNSDirect
import HTTPDNSTransport

/// One client connection, from its request head to the end of its tunnel (loop thread only).
///
/// Phases: read the head (within the head deadline) → check the credential and target → connect
/// (an IP literal or a fresh cached answer right here; otherwise a ``ProxyConnector`` task picks
/// addresses and the loop connects each) → relay both ways with two ``ProxyPump``s until both ends
/// close or the idle limit passes. Refusals are answered with a status and `Connection: close`,
/// then the connection drains briefly so the answer is not lost to a reset.
///
/// Both sockets are registered once, edge-triggered (see ``ProxyLoop``); the connection keeps what
/// their events said, and the pumps clear it when a call would block.
final class ProxyConnection {
    enum Phase {
        case head
        case connecting
        case relaying
        case draining
        case closed
    }

    /// The connect in flight: one address, its deadline, and who hears how it ended.
    private struct Attempt {
        var address: HTTPDNSIPAddress
        var number: Int
        var deadline: UInt64
        /// The connector task's continuation; nil for the fast path's own first attempt.
        var deliver: ((ProxyConnector.AttemptResult) -> Void)?
    }

    let id: UInt64
    let client: Int32
    // The loop outlives its connections (it closes them all before it ends).
    private unowned(unsafe) let loop: ProxyLoop
    private(set) var phase: Phase = .head
    private var clientToken: UInt64 = 0
    private var upstream: Int32 = -1
    private var upstreamToken: UInt64 = 0
    private var clientInterest = ProxyLoop.socketEvents
    private var upstreamInterest = ProxyLoop.socketEvents
    private var headBuffer: [UInt8] = []
    private(set) var target: ProxyRequestHead.Target?
    private var head: ProxyRequestHead?
    /// The target given as an IP literal, if it was.
    private var literal: HTTPDNSIPAddress?
    private var forwarding = false
    private let acceptedAt: UInt64
    private var lastActivity: UInt64
    private var drainDeadline: UInt64 = 0
    private var reply: [UInt8] = []
    private var replyOffset = 0
    private var toServer: ProxyPump?
    private var toClient: ProxyPump?
    private var attempt: Attempt?
    // What the edges said before the pumps exist.
    private var clientReadable = false
    private var clientHungUp = false
    private var upstreamReadable = false
    private var upstreamHungUp = false

    init(id: UInt64, client: Int32, loop: ProxyLoop, now: UInt64) {
        self.id = id
        self.client = client
        self.loop = loop
        self.acceptedAt = now
        self.lastActivity = now
    }

    var isConnecting: Bool { phase == .connecting }
    var isAttempting: Bool { attempt != nil }

    private var monitor: any HTTPDNSProxyMonitor { loop.settings.monitor }

    /// Starts reading the request head.
    func begin() {
        clientToken = loop.register(client, .client(self))
        if clientToken == 0 { close() }
    }

    // MARK: - Events

    private static let readable = UInt32(HTTPDNS_PROXY_READABLE | HTTPDNS_PROXY_PEER_CLOSED | HTTPDNS_PROXY_HANGUP | HTTPDNS_PROXY_ERROR)
    private static let writable = UInt32(HTTPDNS_PROXY_WRITABLE | HTTPDNS_PROXY_HANGUP | HTTPDNS_PROXY_ERROR)
    private static let hungUp = UInt32(HTTPDNS_PROXY_PEER_CLOSED | HTTPDNS_PROXY_HANGUP | HTTPDNS_PROXY_ERROR)
    private static let failed = UInt32(HTTPDNS_PROXY_HANGUP | HTTPDNS_PROXY_ERROR)

    func clientEvent(_ events: UInt32) {
        let readable = events & Self.readable != 0
        let hungUp = events & Self.hungUp != 0
        switch phase {
        case .head:
            if readable { clientReadable = true }
            if hungUp { clientHungUp = true }
            readHead()
        case .connecting:
            // Nothing is read while connecting; only a failed or vanished client matters.
            if readable { clientReadable = true }
            if hungUp { clientHungUp = true }
            if events & Self.failed != 0 { close() }
        case .relaying:
            if readable { toServer?.sourceReadable = true }
            if hungUp { toServer?.sourceHungUp = true }
            if events & Self.writable != 0 { toClient?.destinationWritable = true }
            relay()
        case .draining:
            drain()
        case .closed:
            break
        }
    }

    func upstreamEvent(_ events: UInt32) {
        switch phase {
        case .connecting:
            guard attempt != nil else { return }
            if events & Self.readable != 0 { upstreamReadable = true }
            if events & Self.hungUp != 0 { upstreamHungUp = true }
            if events & Self.failed != 0 {
                // Refused or unreachable: the socket's pending error says which.
                let code = ProxySocket.pendingError(upstream)
                attemptFailed(code == ETIMEDOUT ? .timedOut : .cannotConnectToHost, ProxySocket.errorText(code == 0 ? ECONNREFUSED : code))
            } else if events & UInt32(HTTPDNS_PROXY_WRITABLE) != 0 {
                // Writable without an error: the handshake is done.
                attemptSucceeded()
            }
        case .relaying:
            if events & Self.readable != 0 { toClient?.sourceReadable = true }
            if events & Self.hungUp != 0 { toClient?.sourceHungUp = true }
            if events & Self.writable != 0 { toServer?.destinationWritable = true }
            relay()
        case .head, .draining, .closed:
            break
        }
    }

    /// Deadlines: the request head, the connect attempt, idleness, the drain after a refusal.
    func checkDeadlines(now: UInt64) {
        let settings = loop.settings
        switch phase {
        case .head:
            if now &- acceptedAt > settings.headTimeout {
                monitor.proxyRefused(status: 408, reason: "no complete request head in time")
                respond(status: 408, reason: "no complete request head in time", drain: false)
            }
        case .connecting:
            if let attempt, now > attempt.deadline {
                attemptFailed(.timedOut, "connect timed out")
            }
        case .relaying:
            if now &- lastActivity > settings.idleTimeout { close() }
        case .draining:
            if now > drainDeadline { close() }
        case .closed:
            break
        }
    }

    // MARK: - Request head

    /// Reads until the head is complete, the socket is drained or the client has gone.
    private func readHead() {
        while phase == .head, clientReadable {
            let room = min(ProxyRequestHead.maximumBytes + 1 - headBuffer.count, loop.scratch.count)
            let count = recv(client, loop.scratch.baseAddress, room, 0)
            if count < 0 {
                if errno == EINTR { continue }
                if errno == EAGAIN {
                    clientReadable = false
                    return
                }
                close()
                return
            }
            if count == 0 {
                close()
                return
            }
            // A short read drained the socket (unless the client closed: then read on to the end).
            if count < room, !clientHungUp { clientReadable = false }
            let bytes = UnsafeRawBufferPointer(rebasing: loop.scratch[0..<count])
            if headBuffer.isEmpty {
                // The usual case: the whole head in one read, parsed where it lies.
                parseHead(bytes)
            } else {
                headBuffer += bytes
                let buffered = headBuffer
                buffered.withUnsafeBytes { parseHead($0) }
            }
        }
    }

    /// Looks at everything received so far (`bytes`); acts on a complete head, keeps an incomplete one.
    private func parseHead(_ bytes: UnsafeRawBufferPointer) {
        let parsed: ProxyRequestHead.Parse
        do {
            parsed = try ProxyRequestHead.parse(contiguous: bytes)
        } catch {
            monitor.proxyRefused(status: error.status, reason: error.description)
            respond(status: error.status, reason: error.detail, drain: true)
            return
        }
        guard case .complete(let head, let length) = parsed else {
            if headBuffer.isEmpty { headBuffer = Array(bytes) }
            return
        }
        headBuffer = length < bytes.count ? Array(bytes[length...]) : []
        self.head = head
        guard loop.settings.authorizes(head) else {
            monitor.proxyRefused(status: 407, reason: "missing or wrong proxy credential")
            respond(status: 407, reason: "proxy credential required", drain: true)
            return
        }
        target = head.target
        if case .forward = head.target { forwarding = true }
        literal = HTTPDNSIPAddress(head.target.host)
        let policy = loop.settings.policy
        if let literal, !policy.allows(literal, port: head.target.port) {
            fail(ProxyConnector.Failure(status: 403, reason: "target forbidden by the proxy's policy"))
            return
        }
        phase = .connecting
        if let address = cachedAddress(head.target) {
            startAttempt(address: address, port: head.target.port, number: 1, deliver: nil)
        } else {
            startConnector()
        }
    }

    /// The whole choice (resolution, failover) as a task; it hands each connect back to the loop.
    private func startConnector() {
        guard let target else { return }
        let connector = loop.settings.connector
        let (id, policy, loop) = (self.id, loop.settings.policy, self.loop)
        Task { await connector.connect(id: id, host: target.host, port: target.port, policy: policy, loop: loop) }
    }

    /// The fast path: an IP literal, or a protected host with a fresh cached answer (the engine's
    /// synchronous cache look, which never waits), is connected right here without a task. If that
    /// first address fails it cools down and the connector takes over, trying it last.
    private func cachedAddress(_ target: ProxyRequestHead.Target) -> HTTPDNSIPAddress? {
        if let literal { return literal }
        let failover = loop.settings.connector.failover
        let engine = failover.engine
        guard engine.protects(target.host), let answer = engine.cachedAnswer(target.host) else { return nil }
        // A host with remembered block-redirect addresses is the connector's (sticky redirect).
        guard failover.redirectedAddresses(for: HTTPDNSHostPolicy.normalize(target.host)) == nil else { return nil }
        return answer.addresses.first { loop.settings.policy.allows($0, port: target.port) }
    }

    // MARK: - Connecting

    /// Starts a non-blocking connect to `address`; `deliver` (the connector's) hears how it ended,
    /// or, on the fast path (nil), the connection itself handles a failure.
    func startAttempt(address: HTTPDNSIPAddress, port: UInt16, number: Int, deliver: ((ProxyConnector.AttemptResult) -> Void)?) {
        attempt = Attempt(
            address: address, number: number,
            deadline: loop.now + loop.settings.connectTimeout, deliver: deliver)
        let start = ProxySocket.connect(address, port: port)
        switch start {
        case .connected(let socket), .inProgress(let socket):
            upstream = socket
            upstreamReadable = false
            upstreamHungUp = false
            upstreamToken = loop.register(socket, .upstream(self))
            upstreamInterest = ProxyLoop.socketEvents
            guard upstreamToken != 0 else {
                attemptFailed(.cannotConnectToHost, "epoll: \(ProxySocket.errorText(errno))")
                return
            }
            // In progress, the socket's first writable edge says when the handshake is over.
            if case .connected = start { attemptSucceeded() }
        case .failed(let code):
            attemptFailed(code == ETIMEDOUT ? .timedOut : .cannotConnectToHost, ProxySocket.errorText(code))
        }
    }

    private func attemptSucceeded() {
        guard let attempt else { return }
        self.attempt = nil
        upstreamConnected(address: attempt.address, attempts: attempt.number)
        attempt.deliver?(.connected)
    }

    /// The attempt failed: drop its socket, then let the connector (or the fast path) go on.
    private func attemptFailed(_ code: HTTPTransportError.Code, _ detail: String) {
        guard let attempt else { return }
        self.attempt = nil
        closeUpstream()
        let error = HTTPTransportError(code, detail, host: target?.host, attemptedAddress: attempt.address)
        if let deliver = attempt.deliver {
            deliver(.failed(error))
            return
        }
        // The fast path's own attempt.
        if literal != nil {
            monitor.connectionFailed(address: attempt.address, error: error.urlError)
            // Nothing else to try for an address given as such.
            fail(ProxyConnector.Failure(status: code == .timedOut ? 504 : 502, reason: "\(attempt.address.uriText): \(detail)"))
        } else {
            loop.settings.connector.failover.connectFailed(attempt.address, error: error)
            startConnector()
        }
    }

    // MARK: - Connected

    /// The upstream socket connected: start relaying.
    private func upstreamConnected(address: HTTPDNSIPAddress, attempts: Int) {
        guard let head else {
            close()
            return
        }
        let leftover = headBuffer
        headBuffer = []
        var up: ProxyPump
        var down: ProxyPump
        switch head.target {
        case .tunnel:
            up = ProxyPump(from: client, to: upstream, prefix: leftover, scanResponse: false)
            down = ProxyPump(from: upstream, to: client, prefix: Self.established, scanResponse: false)
        case .forward:
            up = ProxyPump(from: client, to: upstream, prefix: ProxyForwarding.upstreamHead(head) + leftover, scanResponse: false)
            down = ProxyPump(from: upstream, to: client, prefix: [], scanResponse: true)
        }
        up.sourceReadable = clientReadable
        up.sourceHungUp = clientHungUp
        down.sourceReadable = upstreamReadable
        down.sourceHungUp = upstreamHungUp
        toServer = up
        toClient = down
        phase = .relaying
        monitor.proxyTunnelOpened(host: head.target.host, port: head.target.port, address: address, attempts: attempts)
        relay()
    }

    private static let established = Array("HTTP/1.1 200 Connection established\r\n\r\n".utf8)

    /// No address connected.
    func connectFailed(_ failure: ProxyConnector.Failure) {
        fail(failure)
    }

    private func fail(_ failure: ProxyConnector.Failure) {
        if let target {
            monitor.proxyTunnelFailed(host: target.host, port: target.port, status: failure.status, reason: failure.reason)
        }
        respond(status: failure.status, reason: failure.reason, drain: true)
    }

    // MARK: - Relaying

    /// Runs both pumps as far as the edges seen allow (a pump with nothing known to do makes no call).
    private func relay() {
        guard toServer != nil, toClient != nil else { return }
        let upLast = toClient!.finished
        let up = toServer!.run(loop: loop, closing: upLast)
        // Only a connection whose both ends are over lets the close carry the end: a forwarded
        // response may end while the client still sends, and a close over unread bytes resets the
        // connection, which would drop what is still queued. There the end goes out first.
        let downLast = toServer!.finished
        let down = toClient!.run(loop: loop, closing: downLast)
        if up || down { lastActivity = loop.now }
        if toClient!.failure != nil || toServer!.failure != nil {
            if toClient!.badResponse, toClient!.moved == 0, let target {
                teardownUpstream()
                fail(ProxyConnector.Failure(status: 502, reason: "bad response from \(target.host)"))
            } else {
                close()
            }
            return
        }
        if toClient!.finished, toServer!.finished || forwarding {
            close()
            return
        }
        // A socket whose bytes wait for the other side is not watched for reading until they move.
        let clientEvents = toServer!.waitsForDestination ? ProxyLoop.writeOnlyEvents : ProxyLoop.socketEvents
        if clientEvents != clientInterest {
            clientInterest = clientEvents
            loop.modify(client, token: clientToken, events: clientEvents)
        }
        let upstreamEvents = toClient!.waitsForDestination ? ProxyLoop.writeOnlyEvents : ProxyLoop.socketEvents
        if upstreamEvents != upstreamInterest {
            upstreamInterest = upstreamEvents
            loop.modify(upstream, token: upstreamToken, events: upstreamEvents)
        }
    }

    // MARK: - Refusals

    /// Answers `status` with `Connection: close`; with `drain`, then reads and drops what the client
    /// still sends for up to a second, so that closing does not reset the connection before the
    /// answer is read.
    func respond(status: Int, reason: String, drain: Bool) {
        reply = ProxyConnection.response(status: status, reason: reason)
        replyOffset = 0
        phase = .draining
        drainDeadline = loop.now + (drain ? 1_000_000_000 : 0)
        if clientToken == 0 {
            clientToken = loop.register(client, .client(self))
            clientInterest = ProxyLoop.socketEvents
        } else if clientInterest != ProxyLoop.socketEvents {
            clientInterest = ProxyLoop.socketEvents
            loop.modify(client, token: clientToken, events: clientInterest)
        }
        if drain { self.drain() } else { flushReplyAndClose() }
    }

    /// Refuses a connection that was never admitted (over the limit): one write, then close.
    func refuse(status: Int, reason: String) {
        let bytes = ProxyConnection.response(status: status, reason: reason)
        _ = bytes.withUnsafeBytes { send(client, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        Glibc.close(client)
        phase = .closed
    }

    private func flushReplyAndClose() {
        _ = reply.withUnsafeBytes { send(client, $0.baseAddress! + replyOffset, $0.count - replyOffset, Int32(MSG_NOSIGNAL)) }
        close()
    }

    /// Sends the rest of the reply, then reads and drops until the client's end (each client edge
    /// calls it again).
    private func drain() {
        if replyOffset < reply.count {
            let count = reply.withUnsafeBytes { send(client, $0.baseAddress! + replyOffset, $0.count - replyOffset, Int32(MSG_NOSIGNAL)) }
            if count > 0 { replyOffset += count }
            if count < 0, errno != EAGAIN, errno != EINTR {
                close()
                return
            }
            // Not all taken: the next writable edge brings the connection back here.
            if replyOffset < reply.count { return }
            Glibc.shutdown(client, Int32(SHUT_WR))
        }
        while true {
            let count = recv(client, loop.scratch.baseAddress, loop.scratch.count, 0)
            if count > 0 { continue }
            if count < 0, errno == EAGAIN { return }
            if count < 0, errno == EINTR { continue }
            close()
            return
        }
    }

    static func response(status: Int, reason: String) -> [UInt8] {
        let phrase: String
        switch status {
        case 400: phrase = "Bad Request"
        case 403: phrase = "Forbidden"
        case 407: phrase = "Proxy Authentication Required"
        case 408: phrase = "Request Timeout"
        case 431: phrase = "Request Header Fields Too Large"
        case 501: phrase = "Not Implemented"
        case 502: phrase = "Bad Gateway"
        case 503: phrase = "Service Unavailable"
        case 504: phrase = "Gateway Timeout"
        case 505: phrase = "HTTP Version Not Supported"
        default: phrase = "Error"
        }
        let body = "httpdns proxy: \(reason.filter { $0 != "\r" && $0 != "\n" })\n"
        var text = "HTTP/1.1 \(status) \(phrase)\r\n"
        if status == 407 { text += "Proxy-Authenticate: Basic realm=\"httpdns\"\r\n" }
        text += "Content-Type: text/plain; charset=utf-8\r\nContent-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n"
        return Array((text + body).utf8)
    }

    // MARK: - Closing

    /// Closes the upstream socket (the close takes it out of the epoll set).
    private func closeUpstream() {
        guard upstream >= 0 else { return }
        loop.forget(upstreamToken)
        upstreamToken = 0
        Glibc.close(upstream)
        upstream = -1
    }

    private func teardownUpstream() {
        closeUpstream()
        if var toServer, var toClient {
            if let target {
                monitor.proxyTunnelClosed(host: target.host, port: target.port, bytesToServer: toServer.moved, bytesToClient: toClient.moved)
            }
            toServer.release(to: loop)
            toClient.release(to: loop)
        }
        toServer = nil
        toClient = nil
    }

    /// Closes both sockets and forgets the connection.
    func close() {
        guard phase != .closed else { return }
        phase = .closed
        if let attempt {
            self.attempt = nil
            attempt.deliver?(.gone)
        }
        teardownUpstream()
        loop.forget(clientToken)
        clientToken = 0
        Glibc.close(client)
        loop.connectionClosed(id)
    }
}
