// The HTTP engine: h2o's evloop library (Debian libh2o-evloop-dev 2.2.5, OpenSSL 3), the library
// dnsdist's DoH frontend is built on. Chosen after a spike against the alternative (libnghttp2 with
// an epoll loop of our own and OpenSSL): h2o brings HTTP/1.1, HTTP/2 over TLS with ALPN, h2c (prior
// knowledge and Upgrade), request deadlines, HTTP/2 stream limits and GOAWAY in one tested event
// loop, where the alternative would need an HTTP/1 parser from elsewhere and our own TLS and
// timer plumbing. h2o's headers did not fight Swift because Swift never imports them: the C target
// CH2O wraps the few calls we need behind opaque types, and its callbacks (accept, request,
// proceed, close) come back here on a loop thread. Several loop threads (one h2o context each;
// loop 0 accepts and hands connections to the least busy) let one process use more than one core.
//
// Known limit of h2o 2.2: a request body is read whole before the handler runs (streaming request
// bodies arrived in h2o 2.3). Past 4 MiB (CH2O lowers h2o's 32 MiB `h2o_socket_buffer_mmap_settings`)
// a body goes to an unlinked temporary file that h2o maps, so a 64 MiB upload does not sit in
// anonymous memory; a ``BodySink`` then gets it in 64 KiB pieces.
import CH2O
import Foundation
import HTTPDNSCore

/// A small event-driven HTTP/1.1 and HTTP/2 server (h2o's event loop), plain and TLS, on one or more
/// listening sockets.
///
/// ``Configuration/threads`` loop threads share the connections, each owning those it was handed;
/// handlers never run on them. A synchronous ``Handler`` runs on a thread of its own (it may block),
/// and a ``Responder`` is called on the connection's loop thread (several at once when there are
/// several loops) and answers, then or later, through its ``Exchange`` from any thread: the
/// response is queued to that loop (h2o's multithread queue: a mutex and a pipe), or, when answered
/// on the loop itself, written at the end of that turn of the loop together with the others made
/// in it (their clients are then woken in one burst instead of one at a time). Past ``Limits`` the
/// server sheds load visibly: a refused plain connection reads a `503`, a refused TLS connection is
/// closed at once, an HTTP/2 request past the stream limit reads a `503`.
///
/// A listener with a ``MessageStream`` speaks no HTTP: its connections carry length-prefixed
/// messages (DNS over TCP, and over TLS), each handed to the responder as a POST of one path, so
/// that one endpoint answers both; TLS, PROXY headers, connection limits and the drain are the
/// HTTP listeners' own.
///
/// The HTTPDNS endpoints are built on this; tests use it directly as a loopback origin.
package final class HTTPServer: Sendable {
    /// One listening address.
    package struct Listener: Sendable {
        /// The address to bind (IPv4 or IPv6). Default 127.0.0.1.
        package var address: HTTPDNSIPAddress = HTTPDNSIPAddress(bytes: [127, 0, 0, 1])!
        /// The port; 0 lets the system pick one (read it back from ``HTTPServer/ports``). Default 0.
        package var port: Int = 0
        /// PEM certificate chain; with ``tlsKeyPEM`` this listener speaks HTTPS (HTTP/2 or HTTP/1.1
        /// by ALPN). Default nil: plain HTTP/1.1 and h2c.
        package var tlsCertificatePEM: String? = nil
        /// PEM private key for ``tlsCertificatePEM``. Default nil.
        package var tlsKeyPEM: String? = nil
        /// Length-prefixed messages instead of HTTP (DNS over TCP, and over TLS with a certificate:
        /// RFC 7858). Default nil: HTTP.
        package var messageStream: MessageStream? = nil
        /// DNS over QUIC (RFC 9250) on a UDP socket instead of TCP: each query on a stream of its
        /// own, handed to the responder as a message of ``messageStream`` (both are needed, and a
        /// certificate). Served by a thread of its own (CQUIC), with the HTTP listeners' connection
        /// limits, ``Limits/messageIdleTimeout`` as QUIC's idle timeout, ``Limits/maxMessagesInFlight``
        /// streams at once per connection and the same drain. Default false.
        package var isQUIC: Bool = false

        package init(address: HTTPDNSIPAddress = HTTPDNSIPAddress(bytes: [127, 0, 0, 1])!, port: Int = 0) {
            self.address = address
            self.port = port
        }

        /// True when the listener speaks TLS.
        package var isTLS: Bool { tlsCertificatePEM != nil }
    }

    /// Bounds on what clients may hold; past them the server refuses visibly and keeps serving others.
    package struct Limits: Sendable, Hashable {
        /// Open connections in all; more are refused (plain: `503`, TLS: closed). Default 10,000.
        package var maxConnections: Int = 10_000
        /// Open connections from one client address. Default 1,000.
        package var maxConnectionsPerClient: Int = 1_000
        /// HTTP/1: the deadline for a whole request, head and body, from the moment the connection may
        /// send it (accept, the TLS handshake's end, or the previous response); also how long an idle
        /// keep-alive connection stays. A connection cut with a request unfinished is a shed
        /// (``ConnectionEvent/requestDeadline``; a plain client reads `408`). Default 10 s.
        package var requestTimeout: Duration = .seconds(10)
        /// The deadline for a TLS handshake. Default 10 s.
        package var handshakeTimeout: Duration = .seconds(10)
        /// HTTP/2: how long a connection with nothing to do stays. Default 30 s.
        package var idleTimeout: Duration = .seconds(30)
        /// HTTP/2: requests of one connection handled at once (handed to the responder and not yet
        /// answered); more are answered `503` with `Retry-After: 1` at once, without reaching the
        /// responder (``ConnectionEvent/refusedStream``). At most ``streamCeiling``. Default 100.
        package var maxConcurrentStreams: Int = 100

        /// The drain (``HTTPServer/stop(drain:)``): how long a connection with no request in hand must
        /// stay quiet before HTTP/1 closes it or HTTP/2 sends it GOAWAY, and how long HTTP/2 waits
        /// after that GOAWAY before the final one names the last stream it took. A request already on
        /// its way arrives within it and is answered. Default 1 s (h2o's bound on a round trip in its
        /// own graceful shutdown).
        package var drainQuietPeriod: Duration = .seconds(1)

        /// Message streams (``Listener/messageStream``): how long a connection with no message in
        /// hand stays open, and the deadline for the rest of a message begun (a connection cut with
        /// one unfinished is a ``ConnectionEvent/requestDeadline``). RFC 7766 §6.2.3 asks for
        /// seconds, not minutes, on a busy server. Default 10 s.
        package var messageIdleTimeout: Duration = .seconds(10)
        /// Message streams: messages of one connection handed to the responder and not yet
        /// answered; at this many the server stops reading the connection until an answer is
        /// sent (the client's further queries wait in TCP, nothing is refused). Default 64.
        package var maxMessagesInFlight: Int = 64

        /// h2o 2.2 advertises `SETTINGS_MAX_CONCURRENT_STREAMS` 100 and resets streams past it itself.
        package static let streamCeiling = 100

        package init() {}
    }

    /// Where and how to listen.
    package struct Configuration: Sendable {
        /// The listening sockets; the first is the one ``port`` and ``baseURL`` describe. Default one,
        /// plain, on 127.0.0.1 with a port the system picks.
        package var listeners: [Listener] = [Listener()]
        /// Larger request bodies get `413 Payload Too Large`. Not applied to bodies given to a
        /// ``BodySink`` (those are bounded by ``maxSinkBodyBytes``). Default 1 MiB.
        package var maxRequestBodyBytes: Int = 1 << 20
        /// Largest body a ``BodySink`` may receive. Default 1 GiB.
        package var maxSinkBodyBytes: Int = 1 << 30
        /// Connection limits and deadlines.
        package var limits: Limits = .init()
        /// Sets `SO_REUSEPORT` so that several processes share one port (the kernel spreads new
        /// connections among them). Default false.
        package var reusePort: Bool = false
        /// PROXY protocol headers read from trusted balancers. Default nil: none is read.
        package var proxyProtocol: ProxyProtocol? = nil
        /// TLS session ticket keys, 80 bytes each in nginx's layout, checked by the caller (the
        /// service's `HTTPDNSTLSTicketKeys`): the first encrypts, all decrypt, so that a ticket from
        /// any instance holding the same keys resumes here. Default nil: OpenSSL's own key, random
        /// per process (tickets resume on this process only).
        package var tlsTicketKeys: [[UInt8]]? = nil
        /// Told of every connection opened, closed or refused, and of every request refused by a limit,
        /// on a loop thread, several at once with several loops (keep it cheap: metrics). Default nil.
        package var connectionEvents: (@Sendable (ConnectionEvent) -> Void)? = nil
        /// Event-loop threads, each with its own h2o context; connections are spread among them (1 to
        /// ``maxThreads``). Default ``HTTPDNSProcessors/usable``, the CPUs this process may run on
        /// (its affinity mask: `taskset`, a container's cpuset).
        package var threads: Int = HTTPDNSProcessors.usable

        /// Most loop threads one server runs.
        package static let maxThreads = 256

        package init(address: HTTPDNSIPAddress = HTTPDNSIPAddress(bytes: [127, 0, 0, 1])!, port: Int = 0) {
            listeners = [Listener(address: address, port: port)]
        }

        /// The first listener's address.
        package var address: HTTPDNSIPAddress {
            get { listeners[0].address }
            set { listeners[0].address = newValue }
        }

        /// The first listener's port.
        package var port: Int {
            get { listeners[0].port }
            set { listeners[0].port = newValue }
        }

        /// The first listener's certificate chain.
        package var tlsCertificatePEM: String? {
            get { listeners[0].tlsCertificatePEM }
            set { listeners[0].tlsCertificatePEM = newValue }
        }

        /// The first listener's key.
        package var tlsKeyPEM: String? {
            get { listeners[0].tlsKeyPEM }
            set { listeners[0].tlsKeyPEM = newValue }
        }
    }

    /// What happened to a connection, for ``Configuration/connectionEvents``.
    package enum ConnectionEvent: Sendable {
        case opened, closed
        /// Refused: ``Limits/maxConnections`` was reached.
        case refusedConnections
        /// Refused: the client held ``Limits/maxConnectionsPerClient``.
        case refusedPerClient
        /// An HTTP/2 request was answered `503`: its connection had ``Limits/maxConcurrentStreams``
        /// requests in hand.
        case refusedStream
        /// An HTTP/1 connection was closed at ``Limits/requestTimeout`` with a request unfinished.
        case requestDeadline
        /// A connection was closed at the end of the drain (``HTTPServer/stop(drain:)``) with a
        /// request in hand or part of one received.
        case drainCut
    }

    /// Produces the response for a request on a thread of its own (it may block).
    package typealias Handler = @Sendable (Request) -> Response
    /// Called on the connection's loop thread (several may call at once), must not block; answers
    /// through the exchange, from any thread.
    package typealias Responder = @Sendable (Request, (any BodySink)?, Exchange) -> Void

    /// The settings the server started with.
    package let configuration: Configuration
    /// The bound port of each listener, in order.
    package let ports: [Int]
    let core: HTTPServerCore

    /// Starts listening; requests go to `handler`, each on a thread of its own.
    ///
    /// - Throws: ``StartError`` when an address cannot be bound or TLS material is rejected.
    package convenience init(configuration: Configuration = .init(), handler: @escaping Handler) throws(StartError) {
        try self.init(configuration: configuration, bodySink: nil) { request, sink, exchange in
            Thread { exchange.respond(handler(request)) }.start()
        }
    }

    /// Starts listening; for each request `bodySink` may return a sink that receives the body (the
    /// request passed to it has an empty body), and `handler` gets that sink back, on a thread of its own.
    ///
    /// The sink does not stream the upload: h2o 2.2 buffers the whole request body first (in memory,
    /// past 4 MiB in a mapped temporary file, in this process), and the sink sees it only once it is
    /// complete. A test that measures what a client holds while uploading needs a sink in another
    /// process (`HTTPDNSTestSupport`'s `Nginx.Location.putSink`).
    package convenience init(
        configuration: Configuration,
        bodySink: @escaping @Sendable (Request) -> (any BodySink)?,
        handler: @escaping @Sendable (Request, (any BodySink)?) -> Response
    ) throws(StartError) {
        try self.init(configuration: configuration, bodySink: bodySink) { request, sink, exchange in
            Thread { exchange.respond(handler(request, sink)) }.start()
        }
    }

    /// Starts listening; `responder` is called on the loop thread for each request.
    package init(
        configuration: Configuration,
        bodySink: (@Sendable (Request) -> (any BodySink)?)?,
        responder: @escaping Responder
    ) throws(StartError) {
        guard !configuration.listeners.isEmpty else { throw StartError("no address to listen on") }
        self.configuration = configuration
        let core = try HTTPServerCore(configuration: configuration, bodySink: bodySink, responder: responder)
        self.core = core
        self.ports = core.ports
    }

    deinit {
        core.stop(drain: .zero)
    }

    /// Stops accepting (closes the listening sockets first), answers every request already on its
    /// way for at most `drain`, then closes every connection that remains. Safe to call more than once.
    ///
    /// During the drain every HTTP/1 response says `Connection: close` and its connection closes
    /// after it; an HTTP/1 connection with no request in hand closes once quiet for
    /// ``Limits/drainQuietPeriod``. An HTTP/2 connection gets GOAWAY ahead of its next response
    /// (or once quiet), then a final GOAWAY naming the last stream it took, and closes once those
    /// are answered (RFC 9113 §6.8). A ``MessageStream`` connection is read and answered until no
    /// message has come for ``Limits/drainQuietPeriod`` and none is in hand, then closed (TLS:
    /// `close_notify`). Connections closed at the end with a request unfinished are
    /// counted (``drainCutCount``, ``ConnectionEvent/drainCut``). It returns once every connection
    /// has closed and every response was handed over, or when `drain` has passed.
    package func stop(drain: Duration = .seconds(5)) {
        core.stop(drain: drain)
    }

    /// Replaces the certificate and key of listener `index` for new connections.
    ///
    /// - Throws: ``StartError`` naming what is wrong with the material; the old pair stays.
    package func reloadTLS(listener index: Int, certificatePEM: String, keyPEM: String) throws(StartError) {
        try core.reloadTLS(listener: index, certificatePEM: certificatePEM, keyPEM: keyPEM)
    }

    /// Replaces the TLS session ticket keys for every TLS listener at once (tickets of keys no
    /// longer listed then need a full handshake).
    ///
    /// - Throws: ``StartError`` when the server started without ``Configuration/tlsTicketKeys``.
    package func reloadTLSTicketKeys(_ keys: [[UInt8]]) throws(StartError) {
        try core.reloadTicketKeys(keys)
    }

    /// The first listener's bound port.
    package var port: Int { ports[0] }

    /// `http(s)://address:port` of the first listener, for building request URLs in tests.
    package var baseURL: URL { url(listener: 0) }

    /// `http(s)://address:port` of listener `index` (`tls://` or `tcp://` for a message stream,
    /// `quic://` for DNS over QUIC).
    package func url(listener index: Int) -> URL {
        let listener = configuration.listeners[index]
        let scheme = listener.isQUIC ? "quic" : listener.messageStream == nil ? (listener.isTLS ? "https" : "http") : (listener.isTLS ? "tls" : "tcp")
        return URL(string: "\(scheme)://\(listener.address.uriText):\(ports[index])")!
    }

    /// TCP connections accepted and kept so far (keep-alive reuse shows as fewer connections than requests).
    package var connectionCount: Int { core.accepted.load(ordering: .relaxed) }

    /// Connections open right now, TCP and QUIC (a client that cancelled shows up as a drop here).
    package var openConnectionCount: Int { core.open.load(ordering: .relaxed) }

    /// Requests handed to the handler so far.
    package var requestCount: Int { core.requests.load(ordering: .relaxed) }

    /// Connections refused at a limit so far.
    package var refusedConnectionCount: Int { core.refused.load(ordering: .relaxed) }

    /// HTTP/2 requests answered `503` past ``Limits/maxConcurrentStreams`` so far.
    package var refusedStreamCount: Int { core.refusedStreams.load(ordering: .relaxed) }

    /// HTTP/1 connections cut at ``Limits/requestTimeout`` with a request unfinished so far.
    package var requestDeadlineCount: Int { core.deadlineCuts.load(ordering: .relaxed) }

    /// Connections closed at the end of a drain with a request unfinished.
    package var drainCutCount: Int { core.drainCuts.load(ordering: .relaxed) }

    /// Requests whose response has not been handed to the loop yet.
    package var inFlightRequestCount: Int { core.inFlight.load(ordering: .relaxed) }
}
