import CH2O
import CQUIC
import Foundation
@_spi(HTTPDNSPackage) import HTTPDNSCore
import Synchronization

/// What the C loops call back into, through their context pointer.
///
/// With several loop threads the callbacks run at the same time: `accept` on loop 0, the others on
/// the loop that holds the connection. `perClient` (accept and close only) sits behind a lock; the
/// counters are atomics read from anywhere; the server pointer sits behind a lock so that stopping
/// happens once.
/// The C server outlives this object's use of it (it is never freed; see `httpdns_h2o_server_destroy`).
final class HTTPServerCore: @unchecked Sendable {
    let maxRequestBodyBytes: Int
    let limits: HTTPServer.Limits
    let bodySink: (@Sendable (HTTPServer.Request) -> (any HTTPServer.BodySink)?)?
    let responder: HTTPServer.Responder
    let ports: [Int]
    /// Each listener's message stream, nil for HTTP.
    let messageStreams: [HTTPServer.MessageStream?]
    let proxyProtocol: HTTPServer.ProxyProtocol?
    let events: (@Sendable (HTTPServer.ConnectionEvent) -> Void)?
    let accepted = Atomic<Int>(0)
    let open = Atomic<Int>(0)
    let requests = Atomic<Int>(0)
    let refused = Atomic<Int>(0)
    /// HTTP/2 requests answered 503 past ``HTTPServer/Limits/maxConcurrentStreams``.
    let refusedStreams = Atomic<Int>(0)
    /// HTTP/1 connections cut at ``HTTPServer/Limits/requestTimeout`` with a request unfinished.
    let deadlineCuts = Atomic<Int>(0)
    /// Connections closed at the end of a drain with a request unfinished.
    let drainCuts = Atomic<Int>(0)
    let inFlight = Atomic<Int>(0)
    /// Open connections per client address (taken on accept and close, not per request).
    private let perClient = HTTPDNSLock<[HTTPDNSIPAddress: Int]>([:])
    /// Streaming responses waiting for `proceed`, by request token.
    let pumps = HTTPDNSLock<[UInt: HTTPServerStreamPump]>([:])
    /// The running server's handle; taken (set to nil) by the one `stop` that destroys it.
    private let server: HTTPDNSLock<ServerHandle?>
    /// The `httpdns_h2o_server *` as bits, for posting without a lock: set once before the loops
    /// start, and valid for ever (the C server is never freed; after `destroy` it drops posts).
    private let postTarget = Atomic<UInt>(0)
    /// The DNS-over-QUIC servers, one per QUIC listener (see ``HTTPServerQUIC``).
    private(set) var quic: [HTTPServerQUIC] = []
    /// The shared TLS session ticket keys (`httpdns_h2o_ticket_store *`), when configured; every TLS
    /// context made here holds a reference of its own.
    private let ticketStore: OpaquePointer?

    /// The `httpdns_h2o_server *`; its post functions are thread-safe.
    struct ServerHandle: @unchecked Sendable {
        let pointer: OpaquePointer
    }

    init(
        configuration: HTTPServer.Configuration,
        bodySink: (@Sendable (HTTPServer.Request) -> (any HTTPServer.BodySink)?)?,
        responder: @escaping HTTPServer.Responder
    ) throws(HTTPServer.StartError) {
        maxRequestBodyBytes = configuration.maxRequestBodyBytes
        limits = configuration.limits
        messageStreams = configuration.listeners.map(\.messageStream)
        proxyProtocol = configuration.proxyProtocol
        events = configuration.connectionEvents
        self.bodySink = bodySink
        self.responder = responder
        HTTPServerSocket.raiseDescriptorLimit()

        let store = configuration.tlsTicketKeys == nil ? nil : httpdns_h2o_ticket_store_create()
        // Until `self` is whole, the store is this function's (each TLS context holds its own reference).
        var whole = false
        defer { if !whole, let store { httpdns_h2o_ticket_store_release(store) } }
        if let keys = configuration.tlsTicketKeys {
            guard let store, Self.set(keys, in: store) else { throw HTTPServer.StartError("cannot set the TLS ticket keys") }
        }
        ticketStore = store

        // TLS first: a bad certificate must not leave a bound port behind.
        var contexts: [OpaquePointer?] = []
        var credentials: [Int: OpaquePointer] = [:]
        defer {
            for context in contexts { if let context { httpdns_h2o_tls_release(context) } }
            for (_, credential) in credentials { httpdns_quic_credentials_release(credential) }
        }
        for (index, listener) in configuration.listeners.enumerated() {
            guard (listener.tlsCertificatePEM == nil) == (listener.tlsKeyPEM == nil) else {
                throw HTTPServer.StartError("TLS needs both a certificate and a key")
            }
            if listener.isQUIC {
                guard let certificate = listener.tlsCertificatePEM, let key = listener.tlsKeyPEM, listener.messageStream != nil else {
                    throw HTTPServer.StartError("DNS over QUIC needs a certificate, a key and a message stream")
                }
                credentials[index] = try HTTPServerQUIC.makeCredentials(certificate: certificate, key: key)
                contexts.append(nil)
            } else if let certificate = listener.tlsCertificatePEM, let key = listener.tlsKeyPEM {
                contexts.append(
                    try Self.makeTLS(certificate: certificate, key: key, tickets: store, messageStream: listener.messageStream != nil))
            } else {
                contexts.append(nil)
            }
        }
        var sockets: [(fd: Int32, port: Int)] = []
        do {
            for listener in configuration.listeners {
                sockets.append(try HTTPServerSocket.listen(listener, reusePort: configuration.reusePort))
            }
        } catch {
            for socket in sockets { close(socket.fd) }
            throw error
        }
        ports = sockets.map(\.port)

        var settings = httpdns_h2o_settings()
        settings.request_timeout_ms = Self.milliseconds(limits.requestTimeout)
        settings.handshake_timeout_ms = Self.milliseconds(limits.handshakeTimeout)
        settings.idle_timeout_ms = Self.milliseconds(limits.idleTimeout)
        settings.drain_quiet_ms = Self.milliseconds(limits.drainQuietPeriod)
        settings.max_streams = min(max(1, limits.maxConcurrentStreams), HTTPServer.Limits.streamCeiling)
        settings.stream_idle_timeout_ms = Self.milliseconds(limits.messageIdleTimeout)
        settings.stream_max_in_flight = max(1, limits.maxMessagesInFlight)
        settings.threads = max(1, min(configuration.threads, HTTPServer.Configuration.maxThreads))
        settings.max_body_bytes = max(
            0, bodySink == nil ? configuration.maxRequestBodyBytes : max(configuration.maxRequestBodyBytes, configuration.maxSinkBodyBytes))
        var callbacks = httpdns_h2o_callbacks()
        callbacks.accepted = serverAccepted
        callbacks.proxy_header = serverProxyHeader
        callbacks.closed = serverClosed
        callbacks.request = serverRequest
        callbacks.proceed = serverProceed
        callbacks.shed = serverShed
        callbacks.stream_message = serverStreamMessage
        server = HTTPDNSLock(nil)
        // From here `self` is whole: its deinit releases the store, whatever happens next.
        whole = true
        callbacks.context = Unmanaged.passUnretained(self).toOpaque()
        guard let pointer = httpdns_h2o_server_create(&settings, callbacks) else {
            for socket in sockets { close(socket.fd) }
            throw HTTPServer.StartError("cannot create the event loop")
        }
        for (index, socket) in sockets.enumerated() {
            if configuration.listeners[index].isQUIC {
                continue
            } else if configuration.listeners[index].messageStream != nil {
                _ = httpdns_h2o_server_add_stream_listener(pointer, socket.fd, contexts[index])
            } else {
                _ = httpdns_h2o_server_add_listener(pointer, socket.fd, contexts[index])
            }
        }
        // The loop holds a reference until the server is stopped (see `stop`).
        _ = Unmanaged.passRetained(self)
        server.withLock { $0 = ServerHandle(pointer: pointer) }
        postTarget.store(UInt(bitPattern: Int(bitPattern: UnsafeRawPointer(pointer))), ordering: .releasing)
        // The QUIC servers; each owns its socket from here, made or not.
        var quicFailure: HTTPServer.StartError? = nil
        for (index, socket) in sockets.enumerated() where configuration.listeners[index].isQUIC {
            guard quicFailure == nil, let credential = credentials[index],
                let server = HTTPServerQUIC(core: self, listener: index, fd: socket.fd, limits: limits, credentials: credential)
            else {
                if quicFailure == nil {
                    quicFailure = HTTPServer.StartError(
                        "cannot start DNS over QUIC on \(configuration.listeners[index].address.uriText):\(socket.port)")
                } else {
                    close(socket.fd)
                }
                continue
            }
            quic.append(server)
        }
        if let quicFailure {
            stop(drain: .zero)
            throw quicFailure
        }
        var status = httpdns_h2o_server_start(pointer)
        for server in quic where status == 0 { status = server.start() }
        guard status == 0 else {
            stop(drain: .zero)
            throw HTTPServer.StartError("cannot start the loop thread: \(String(cString: strerror(status)))")
        }
    }

    static func milliseconds(_ duration: Duration) -> UInt64 {
        let (seconds, attoseconds) = duration.components
        return UInt64(max(1, seconds * 1000 + attoseconds / 1_000_000_000_000_000))
    }

    deinit {
        if let ticketStore { httpdns_h2o_ticket_store_release(ticketStore) }
    }

    /// A TLS context for `certificate` and `key`, using the ticket key store `tickets` when given;
    /// a message stream's offers ALPN `dot` instead of HTTP's protocols.
    static func makeTLS(
        certificate: String, key: String, tickets: OpaquePointer?, messageStream: Bool
    ) throws(HTTPServer.StartError) -> OpaquePointer {
        var error = [CChar](repeating: 0, count: 256)
        guard let context = httpdns_h2o_tls_create(certificate, key, &error, error.count) else {
            let text = error.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }
            throw HTTPServer.StartError(String(decoding: text, as: UTF8.self))
        }
        if let tickets, httpdns_h2o_tls_use_ticket_store(context, tickets) != 0 {
            httpdns_h2o_tls_release(context)
            throw HTTPServer.StartError("cannot use the TLS ticket keys")
        }
        if messageStream { httpdns_h2o_tls_use_dot_alpn(context) }
        return context
    }

    private static func set(_ keys: [[UInt8]], in store: OpaquePointer) -> Bool {
        let bytes = keys.flatMap { $0 }
        return bytes.withUnsafeBufferPointer { httpdns_h2o_ticket_store_set(store, $0.baseAddress, keys.count) } == 0
    }

    func reloadTicketKeys(_ keys: [[UInt8]]) throws(HTTPServer.StartError) {
        guard let ticketStore else { throw HTTPServer.StartError("the server started without TLS ticket keys") }
        guard Self.set(keys, in: ticketStore) else { throw HTTPServer.StartError("cannot set the TLS ticket keys") }
    }

    func reloadTLS(listener index: Int, certificatePEM: String, keyPEM: String) throws(HTTPServer.StartError) {
        if let server = quic.first(where: { $0.listener == index }) {
            let credentials = try HTTPServerQUIC.makeCredentials(certificate: certificatePEM, key: keyPEM)
            defer { httpdns_quic_credentials_release(credentials) }
            server.setCredentials(credentials)
            return
        }
        let context = try Self.makeTLS(
            certificate: certificatePEM, key: keyPEM, tickets: ticketStore,
            messageStream: messageStreams.indices.contains(index) && messageStreams[index] != nil)
        defer { httpdns_h2o_tls_release(context) }
        server.withLock { handle in
            if let handle { httpdns_h2o_server_set_tls(handle.pointer, Int32(index), context) }
        }
    }

    /// See ``HTTPServer/stop(drain:)``.
    func stop(drain: Duration) {
        guard let handle = server.withLock({ $0 }) else { return }
        httpdns_h2o_server_stop_accepting(handle.pointer)
        for server in quic { server.stopAccepting() }
        let clock = ContinuousClock()
        let drainEnd = clock.now + drain
        // The connections close themselves once what was on its way is answered (see
        // `httpdns_h2o_server_stop_accepting`); what remains at the end is cut.
        while open.load(ordering: .relaxed) > 0 || inFlight.load(ordering: .relaxed) > 0, clock.now < drainEnd {
            usleep(2_000)
        }
        let cutBefore = drainCuts.load(ordering: .relaxed)
        httpdns_h2o_server_close_connections(handle.pointer)
        for server in quic { server.closeConnections() }
        // The others close at once. An HTTP/1 connection cut with a request in hand does not: h2o
        // stops reading while a request is in hand and frees the connection only after its
        // response, which can no longer be sent. Waiting for it held every stop that cut a request
        // (and serve's exit) a whole second past the drain.
        let closeEnd = clock.now + .seconds(1)
        while open.load(ordering: .relaxed) > drainCuts.load(ordering: .relaxed) - cutBefore, clock.now < closeEnd {
            usleep(2_000)
        }
        // Taken only now: until here responses could still be posted through the handle.
        guard server.withLock({ value -> Bool in
            defer { value = nil }
            return value != nil
        }) else { return }
        httpdns_h2o_server_destroy(handle.pointer)
        for server in quic { server.destroy() }
        // The loop thread has ended: no more callbacks use the context pointer.
        Unmanaged.passUnretained(self).release()
    }

    // MARK: Loop-thread callbacks (several loops may call at once)

    /// 0 refuse, 1 keep, 2 keep and read a PROXY header first, 3 keep and drop a PROXY header the
    /// connection may start with, keeping the peer's address (a peer ``ProxyProtocol/expects`` does
    /// not name: its header is ignored, as its `X-Forwarded-For` is, rather than taken for HTTP).
    func accept(listener: Int, peer: UnsafePointer<sockaddr>?) -> Int32 {
        let address = Self.peer(peer).0
        // Loop 0 accepts TCP and each QUIC listener's thread its connections: between the check and
        // the count the total can pass the limit by at most one per QUIC listener.
        let total = open.load(ordering: .relaxed)
        let kept = perClient.withLock { perClient -> Bool in
            guard total < limits.maxConnections else { return false }
            guard let address else { return true }
            guard perClient[address, default: 0] < limits.maxConnectionsPerClient else { return false }
            perClient[address, default: 0] += 1
            return true
        }
        guard kept else {
            refused.add(1, ordering: .relaxed)
            events?(total < limits.maxConnections ? .refusedPerClient : .refusedConnections)
            return 0
        }
        events?(.opened)
        open.add(1, ordering: .relaxed)
        accepted.add(1, ordering: .relaxed)
        guard let proxyProtocol, let address else { return 1 }
        return proxyProtocol.expects(listener, address) ? 2 : 3
    }

    /// Bytes used by the PROXY header at the start of `bytes`, 0 for more, -1 for none.
    func proxyHeader(_ bytes: UnsafeRawBufferPointer, source: UnsafeMutablePointer<sockaddr_storage>, length: UnsafeMutablePointer<socklen_t>) -> Int {
        length.pointee = 0
        guard let proxyProtocol else { return -1 }
        switch proxyProtocol.parse(bytes) {
        case .needMore:
            return 0
        case .invalid:
            return -1
        case .absent:
            return -2
        case .header(let used, let address, let port):
            guard used > 0, used <= bytes.count else { return -1 }
            if let address {
                HTTPServerSocket.withSocketAddress(address, port: port) { pointer, size in
                    UnsafeMutableRawPointer(source).copyMemory(from: pointer, byteCount: Int(size))
                    length.pointee = size
                }
            }
            return used
        }
    }

    func closed(peer: UnsafePointer<sockaddr>?) {
        open.subtract(1, ordering: .relaxed)
        events?(.closed)
        guard let address = Self.peer(peer).0 else { return }
        perClient.withLock { perClient in
            guard let count = perClient[address] else { return }
            if count <= 1 { perClient[address] = nil } else { perClient[address] = count - 1 }
        }
    }

    func request(_ request: OpaquePointer) {
        let token = UInt(bitPattern: httpdns_h2o_request_token(request))
        requests.add(1, ordering: .relaxed)
        inFlight.add(1, ordering: .relaxed)
        var head = Self.readHead(request)
        let exchange = HTTPServer.Exchange(core: self, token: token, isHead: head.method == "HEAD")
        var length = 0
        let body = httpdns_h2o_request_body(request, &length)
        let bytes = UnsafeRawBufferPointer(start: body, count: body == nil ? 0 : length)
        if body != nil, head.header("content-length") == nil {
            // h2o keeps the body's length to itself; handlers still see it as a header.
            head.headers.append(HTTPServer.Header(name: "content-length", value: String(bytes.count)))
        }
        if let sink = bodySink?(head) {
            var offset = 0
            while offset < bytes.count {
                let piece = min(64 * 1024, bytes.count - offset)
                sink.append(UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + piece)]))
                offset += piece
            }
            responder(head, sink, exchange)
            return
        }
        guard bytes.count <= maxRequestBodyBytes else {
            exchange.respond(.text("payload too large\n", status: 413))
            return
        }
        if !bytes.isEmpty { head.body = Data(bytes) }
        responder(head, nil, exchange)
    }

    /// One message of a message-stream connection, as a POST to its listener's path; `quic` is the
    /// DNS-over-QUIC server it came from, if any.
    func message(
        _ token: OpaquePointer, _ bytes: UnsafeRawBufferPointer, listener: Int, peer: UnsafePointer<sockaddr>?,
        quic: HTTPServerQUIC? = nil
    ) {
        requests.add(1, ordering: .relaxed)
        inFlight.add(1, ordering: .relaxed)
        let exchange = HTTPServer.Exchange(
            core: self, token: UInt(bitPattern: UnsafeRawPointer(token)), isHead: false, isMessage: true, quic: quic)
        guard messageStreams.indices.contains(listener), let stream = messageStreams[listener] else {
            return exchange.respond(.text("not a message stream\n", status: 500))
        }
        let (address, port) = Self.peer(peer)
        var head = HTTPServer.Request(
            method: "POST", path: stream.path, headers: stream.headers, body: Data(bytes), remoteAddress: address,
            remotePort: port, httpVersion: "")
        head.listener = listener
        head.isMessage = true
        head.isQUIC = quic != nil
        responder(head, nil, exchange)
    }

    /// The loop refused work (see `HTTPDNS_H2O_SHED_*`).
    func shed(reason: Int32) {
        switch reason {
        case Int32(HTTPDNS_H2O_SHED_STREAMS):
            refusedStreams.add(1, ordering: .relaxed)
            events?(.refusedStream)
        case Int32(HTTPDNS_H2O_SHED_DEADLINE):
            deadlineCuts.add(1, ordering: .relaxed)
            events?(.requestDeadline)
        case Int32(HTTPDNS_H2O_SHED_DRAIN):
            drainCuts.add(1, ordering: .relaxed)
            events?(.drainCut)
        default:
            break
        }
    }

    func proceed(token: UInt, cancelled: Bool) {
        guard let pump = pumps.withLock({ $0[token] }) else { return }
        pump.proceed(cancelled: cancelled)
    }

    // MARK: Posting (any thread)

    /// Hands a message to the request's loop. No lock is taken or held: on the loop thread the C
    /// side writes the response at once, which may start the next request (and so come back here).
    /// The C server is never freed, and after `destroy` it drops what is posted.
    func post(_ body: (OpaquePointer) -> Void) {
        let bits = postTarget.load(ordering: .acquiring)
        guard bits != 0, let pointer = OpaquePointer(bitPattern: bits) else { return }
        body(pointer)
    }

    func finished(_ token: UInt) {
        inFlight.subtract(1, ordering: .relaxed)
    }

    // MARK: Reading a request

    static func readHead(_ request: OpaquePointer) -> HTTPServer.Request {
        func bytes(_ read: (UnsafeMutablePointer<Int>) -> UnsafePointer<CChar>?) -> UnsafeRawBufferPointer {
            var length = 0
            let base = read(&length)
            return UnsafeRawBufferPointer(start: base, count: base == nil ? 0 : length)
        }
        let method = String(decoding: bytes { httpdns_h2o_request_method(request, $0) }, as: UTF8.self)
        let target = bytes { httpdns_h2o_request_target(request, $0) }
        let queryAt = httpdns_h2o_request_query_at(request)
        let pathBytes = queryAt >= 0 ? target[..<Int(queryAt)] : target[...]
        let path = pathBytes.contains(UInt8(ascii: "%"))
            ? String(decoding: HTTPServerQuery.decode(ArraySlice(pathBytes), plusIsSpace: false), as: UTF8.self)
            : String(decoding: pathBytes, as: UTF8.self)
        let query = queryAt >= 0 ? HTTPServerQuery(target[(Int(queryAt) + 1)...]) : HTTPServerQuery()
        var headers: [HTTPServer.Header] = []
        let count = httpdns_h2o_request_header_count(request)
        headers.reserveCapacity(count + 2)  // room for the host and content-length added below
        for index in 0..<count {
            let name = bytes { httpdns_h2o_request_header_name(request, index, $0) }
            let value = bytes { httpdns_h2o_request_header_value(request, index, $0) }
            headers.append(HTTPServer.Header(name: String(decoding: name, as: UTF8.self), value: String(decoding: value, as: UTF8.self)))
        }
        let authority = bytes { httpdns_h2o_request_authority(request, $0) }
        if !authority.isEmpty, !headers.contains(where: { HTTPDNSASCII.equalsIgnoringCase($0.name, "host") }) {
            // HTTP/2 carries the host as :authority; handlers read it as Host either way.
            headers.append(HTTPServer.Header(name: "host", value: String(decoding: authority, as: UTF8.self)))
        }
        let version: String
        switch httpdns_h2o_request_version(request) {
        case 0x200...: version = "HTTP/2"
        case 0x101: version = "HTTP/1.1"
        default: version = "HTTP/1.0"
        }
        var storage = sockaddr_storage()
        let length = httpdns_h2o_request_peer(request, &storage)
        let (address, port) = length == 0
            ? (nil, 0)
            : withUnsafePointer(to: &storage) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { peer($0) } }
        var head = HTTPServer.Request(
            method: method, path: path, query: query, headers: headers, remoteAddress: address, remotePort: port,
            httpVersion: version)
        head.listener = Int(max(0, httpdns_h2o_request_listener(request)))
        return head
    }

    static func peer(_ address: UnsafePointer<sockaddr>?) -> (HTTPDNSIPAddress?, Int) {
        guard let address else { return (nil, 0) }
        switch Int32(address.pointee.sa_family) {
        case AF_INET:
            return address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { pointer in
                var storage = pointer.pointee.sin_addr
                let bytes = withUnsafeBytes(of: &storage) { Array($0) }
                return (HTTPDNSIPAddress(bytes: bytes), Int(UInt16(bigEndian: pointer.pointee.sin_port)))
            }
        case AF_INET6:
            return address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { pointer in
                var storage = pointer.pointee.sin6_addr
                let bytes = withUnsafeBytes(of: &storage) { Array($0) }
                return (HTTPDNSIPAddress(bytes: bytes), Int(UInt16(bigEndian: pointer.pointee.sin6_port)))
            }
        default:
            return (nil, 0)
        }
    }
}

// C function pointers cannot capture: the core comes back through the context pointer.

private func core(_ context: UnsafeMutableRawPointer?) -> HTTPServerCore {
    Unmanaged<HTTPServerCore>.fromOpaque(context!).takeUnretainedValue()
}

private let serverAccepted: @convention(c) (UnsafeMutableRawPointer?, Int32, UnsafePointer<sockaddr>?, socklen_t) -> Int32 = {
    context, listener, peer, _ in
    core(context).accept(listener: Int(listener), peer: peer)
}

private let serverProxyHeader: @convention(c) (
    UnsafeMutableRawPointer?, UnsafeRawPointer?, Int, UnsafeMutablePointer<sockaddr_storage>?, UnsafeMutablePointer<socklen_t>?
) -> Int = { context, bytes, length, source, sourceLength in
    guard let source, let sourceLength else { return -1 }
    return core(context).proxyHeader(UnsafeRawBufferPointer(start: bytes, count: bytes == nil ? 0 : length), source: source, length: sourceLength)
}

private let serverClosed: @convention(c) (UnsafeMutableRawPointer?, UnsafePointer<sockaddr>?, socklen_t) -> Void = {
    context, peer, _ in
    core(context).closed(peer: peer)
}

private let serverRequest: @convention(c) (UnsafeMutableRawPointer?, OpaquePointer?) -> Void = { context, request in
    guard let request else { return }
    core(context).request(request)
}

private let serverShed: @convention(c) (UnsafeMutableRawPointer?, Int32) -> Void = { context, reason in
    core(context).shed(reason: reason)
}

private let serverStreamMessage: @convention(c) (
    UnsafeMutableRawPointer?, OpaquePointer?, UnsafeRawPointer?, Int, Int32, UnsafePointer<sockaddr>?, socklen_t
) -> Void = { context, message, bytes, length, listener, peer, _ in
    guard let message else { return }
    core(context).message(message, UnsafeRawBufferPointer(start: bytes, count: bytes == nil ? 0 : length), listener: Int(listener), peer: peer)
}

private let serverProceed: @convention(c) (UnsafeMutableRawPointer?, UnsafeMutableRawPointer?, Int32) -> Void = {
    context, token, cancelled in
    core(context).proceed(token: UInt(bitPattern: token), cancelled: cancelled != 0)
}
