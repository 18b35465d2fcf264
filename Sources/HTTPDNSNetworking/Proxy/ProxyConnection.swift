import CHTTPDNSProxy
import Foundation
import HTTPDNSCore

/// One client connection, from its request head to the end of its tunnel (loop thread only).
///
/// Phases: read the head (within the head deadline) → check the credential and target → connect
/// (a ``ProxyConnector`` task picks addresses, the loop connects) → relay both ways with two
/// ``ProxyPump``s until both ends close or the idle limit passes. Refusals are answered with a
/// status and `Connection: close`, then the connection drains briefly so the answer is not lost
/// to a reset.
final class ProxyConnection {
    enum Phase {
        case head
        case connecting
        case relaying
        case draining
        case closed
    }

    let id: UInt64
    let client: Int32
    private unowned let loop: ProxyLoop
    private(set) var phase: Phase = .head
    private var clientToken: UInt64 = 0
    private var upstream: Int32 = -1
    private var upstreamToken: UInt64 = 0
    private var clientInterest: UInt32 = 0
    private var upstreamInterest: UInt32 = 0
    private var headBuffer: [UInt8] = []
    private(set) var target: ProxyRequestHead.Target?
    private var head: ProxyRequestHead?
    private let acceptedAt: UInt64
    private var lastActivity: UInt64
    private var drainDeadline: UInt64 = 0
    private var reply: [UInt8] = []
    private var replyOffset = 0
    private var toServer: ProxyPump?
    private var toClient: ProxyPump?
    private var connectedAddress: HTTPDNSIPAddress?
    var pendingAttempt: ProxyConnectAttempt?

    init(id: UInt64, client: Int32, loop: ProxyLoop, now: UInt64) {
        self.id = id
        self.client = client
        self.loop = loop
        self.acceptedAt = now
        self.lastActivity = now
    }

    var isConnecting: Bool { phase == .connecting }

    private var monitor: any HTTPDNSEventMonitor { loop.settings.connector.monitor }

    /// Starts reading the request head.
    func begin() {
        clientToken = loop.register(client, events: UInt32(HTTPDNS_PROXY_READABLE), .client(self))
        clientInterest = UInt32(HTTPDNS_PROXY_READABLE)
        if clientToken == 0 { close() }
    }

    // MARK: - Events

    func clientEvent(_ events: UInt32) {
        switch phase {
        case .head:
            readHead()
        case .connecting:
            // Nothing is read while connecting; only a failed or vanished client matters.
            if events & UInt32(HTTPDNS_PROXY_ERROR | HTTPDNS_PROXY_HANGUP) != 0 { close() }
        case .relaying:
            relay(events, on: client)
        case .draining:
            drain()
        case .closed:
            break
        }
    }

    func upstreamEvent(_ events: UInt32) {
        guard phase == .relaying else { return }
        relay(events, on: upstream)
    }

    /// Deadlines: the request head, the connect attempt, idleness, the drain after a refusal.
    func checkDeadlines(now: UInt64) {
        let configuration = loop.settings.configuration
        switch phase {
        case .head:
            if now &- acceptedAt > ProxyLoop.nanoseconds(configuration.headTimeout) {
                monitor.proxyRefused(status: 408, reason: "no complete request head in time")
                respond(status: 408, reason: "no complete request head in time", drain: false)
            }
        case .connecting:
            if let attempt = pendingAttempt, now > attempt.deadline {
                pendingAttempt = nil
                attempt.timedOut()
            }
        case .relaying:
            if now &- lastActivity > ProxyLoop.nanoseconds(configuration.idleTimeout) { close() }
        case .draining:
            if now > drainDeadline { close() }
        case .closed:
            break
        }
    }

    // MARK: - Request head

    private func readHead() {
        let room = ProxyRequestHead.maximumBytes + 1 - headBuffer.count
        let count = loop.scratch.withUnsafeMutableBytes { recv(client, $0.baseAddress, min(room, $0.count), 0) }
        if count == 0 || (count < 0 && errno != EAGAIN && errno != EINTR) {
            close()
            return
        }
        guard count > 0 else { return }
        headBuffer += loop.scratch[0..<count]
        let parsed: ProxyRequestHead.Parse
        do {
            parsed = try ProxyRequestHead.parse(headBuffer)
        } catch {
            monitor.proxyRefused(status: error.status, reason: error.description)
            respond(status: error.status, reason: error.detail, drain: true)
            return
        }
        guard case .complete(let head, let length) = parsed else { return }
        let leftover = Array(headBuffer[length...])
        headBuffer = leftover
        self.head = head
        guard loop.settings.authorizes(head) else {
            monitor.proxyRefused(status: 407, reason: "missing or wrong proxy credential")
            respond(status: 407, reason: "proxy credential required", drain: true)
            return
        }
        target = head.target
        let policy = loop.settings.policy
        if let literal = HTTPDNSIPAddress(head.target.host), !policy.allows(literal, port: head.target.port) {
            fail(ProxyConnector.Failure(status: 403, reason: "target forbidden by the proxy's policy"))
            return
        }
        phase = .connecting
        setClientInterest(0)
        if let address = cachedAddress(head.target) {
            connectFromCache(address, target: head.target)
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
        if let literal = HTTPDNSIPAddress(target.host) { return literal }
        let client = loop.settings.connector.client
        let engine = client.engine
        guard engine.protects(target.host), let answer = engine.cachedAnswer(target.host) else { return nil }
        // A host with remembered block-redirect addresses is the connector's (sticky redirect).
        let now = engine.configuration.clock.now()
        let host = HTTPDNSHostPolicy.normalize(target.host)
        guard client.blockedHosts.withLock({ $0.addresses(for: host, now: now) }) == nil else { return nil }
        return answer.addresses.first { loop.settings.policy.allows($0, port: target.port) }
    }

    private func connectFromCache(_ address: HTTPDNSIPAddress, target: ProxyRequestHead.Target) {
        let engine = loop.settings.connector.client.engine
        let literal = HTTPDNSIPAddress(target.host) != nil
        let attempt = ProxyConnectAttempt(
            connection: self, address: address, port: target.port, number: 1,
            deadline: httpdns_proxy_now() + ProxyLoop.nanoseconds(loop.settings.configuration.connectTimeout)
        ) { [weak self] result in
            guard let self, case .failed(let error) = result, self.isConnecting else { return }
            self.monitor.connectionFailed(address: address, error: error.urlError)
            if literal {
                // Nothing else to try for an address given as such.
                self.fail(ProxyConnector.Failure(status: error.code == .timedOut ? 504 : 502, reason: "\(address.uriText): \(error.detail)"))
            } else {
                engine.reportUnreachable(address)
                self.startConnector()
            }
        }
        attempt.start(loop: loop)
    }

    // MARK: - Connected

    /// The loop connected `socket`: start relaying.
    func upstreamConnected(_ socket: Int32, address: HTTPDNSIPAddress, attempts: Int) {
        guard phase == .connecting, let head else {
            Glibc.close(socket)
            return
        }
        upstream = socket
        connectedAddress = address
        upstreamToken = loop.register(socket, events: 0, .upstream(self))
        let leftover = headBuffer
        headBuffer = []
        switch head.target {
        case .tunnel:
            toServer = ProxyPump(from: client, to: socket, prefix: leftover, scanResponse: false)
            toClient = ProxyPump(from: socket, to: client, prefix: Array("HTTP/1.1 200 Connection established\r\n\r\n".utf8), scanResponse: false)
        case .forward:
            toServer = ProxyPump(from: client, to: socket, prefix: ProxyForwarding.upstreamHead(head) + leftover, scanResponse: false)
            toClient = ProxyPump(from: socket, to: client, prefix: [], scanResponse: true)
        }
        phase = .relaying
        monitor.proxyTunnelOpened(host: head.target.host, port: head.target.port, address: address, attempts: attempts)
        relay(0, on: nil)
    }

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

    /// Runs both pumps after `events` on `socket` (nil at the start), then updates the interests.
    /// (Running only the pump an event concerns lost responses under 200 concurrent corelibs tasks in
    /// the differential suite; both pumps it is, one EAGAIN more per event.)
    private func relay(_ events: UInt32, on socket: Int32?) {
        guard let toServer, let toClient else { return }
        let hungUp = events & UInt32(HTTPDNS_PROXY_HANGUP | HTTPDNS_PROXY_ERROR) != 0 ? socket : nil
        if let hungUp {
            // A peer that hung up keeps reporting it: stop watching it; reads of it no longer block
            // (they return what is left, then the end) and writes to it fail at once.
            if hungUp == client {
                loop.deregister(client, token: clientToken)
                clientToken = 0
            } else {
                loop.deregister(upstream, token: upstreamToken)
                upstreamToken = 0
            }
        }
        let up = toServer.run(scratch: &loop.scratch)
        let down = toClient.run(scratch: &loop.scratch)
        if up || down { lastActivity = httpdns_proxy_now() }
        if toClient.failure != nil || toServer.failure != nil {
            if toClient.badResponse, toClient.moved == 0, let target {
                teardownUpstream()
                fail(ProxyConnector.Failure(status: 502, reason: "bad response from \(target.host)"))
            } else {
                close()
            }
            return
        }
        let forward = if case .forward = target { true } else { false }
        if toClient.finished, toServer.finished || forward {
            close()
            return
        }
        setClientInterest(
            (toServer.wantsRead ? UInt32(HTTPDNS_PROXY_READABLE) : 0) | (toClient.wantsWrite ? UInt32(HTTPDNS_PROXY_WRITABLE) : 0))
        let interest = (toClient.wantsRead ? UInt32(HTTPDNS_PROXY_READABLE) : 0) | (toServer.wantsWrite ? UInt32(HTTPDNS_PROXY_WRITABLE) : 0)
        if interest != upstreamInterest, upstreamToken != 0 {
            upstreamInterest = interest
            loop.modify(upstream, token: upstreamToken, events: interest)
        }
    }

    private func setClientInterest(_ interest: UInt32) {
        guard interest != clientInterest, clientToken != 0 else { return }
        clientInterest = interest
        loop.modify(client, token: clientToken, events: interest)
    }

    // MARK: - Refusals

    /// Answers `status` with `Connection: close`; with `drain`, then reads and drops what the client
    /// still sends for up to a second, so that closing does not reset the connection before the
    /// answer is read.
    func respond(status: Int, reason: String, drain: Bool) {
        reply = ProxyConnection.response(status: status, reason: reason)
        replyOffset = 0
        phase = .draining
        drainDeadline = httpdns_proxy_now() + (drain ? 1_000_000_000 : 0)
        if clientToken == 0 {
            clientToken = loop.register(client, events: UInt32(HTTPDNS_PROXY_READABLE), .client(self))
            clientInterest = UInt32(HTTPDNS_PROXY_READABLE)
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

    private func drain() {
        if replyOffset < reply.count {
            let count = reply.withUnsafeBytes { send(client, $0.baseAddress! + replyOffset, $0.count - replyOffset, Int32(MSG_NOSIGNAL)) }
            if count > 0 { replyOffset += count }
            if count < 0, errno != EAGAIN, errno != EINTR {
                close()
                return
            }
            if replyOffset < reply.count {
                setClientInterest(UInt32(HTTPDNS_PROXY_WRITABLE))
                return
            }
            Glibc.shutdown(client, Int32(SHUT_WR))
            setClientInterest(UInt32(HTTPDNS_PROXY_READABLE))
        }
        while true {
            let count = loop.scratch.withUnsafeMutableBytes { recv(client, $0.baseAddress, $0.count, 0) }
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

    private func teardownUpstream() {
        if upstream >= 0 {
            loop.deregister(upstream, token: upstreamToken)
            Glibc.close(upstream)
            upstream = -1
            upstreamToken = 0
        }
        if let toServer, let toClient, let target {
            monitor.proxyTunnelClosed(host: target.host, port: target.port, bytesToServer: toServer.moved, bytesToClient: toClient.moved)
        }
        toServer = nil
        toClient = nil
    }

    /// Closes both sockets and forgets the connection.
    func close() {
        guard phase != .closed else { return }
        phase = .closed
        if let attempt = pendingAttempt {
            pendingAttempt = nil
            attempt.abandon()
        }
        teardownUpstream()
        loop.deregister(client, token: clientToken)
        clientToken = 0
        Glibc.close(client)
        loop.connectionClosed(id)
    }
}
