import CMicroHTTPD
import Foundation
import HTTPDNSCore

/// A small HTTP/1.1 server on libmicrohttpd, with optional TLS (GnuTLS inside libmicrohttpd).
///
/// Each connection gets its own thread (`MHD_USE_THREAD_PER_CONNECTION`), and the handler runs
/// synchronously on it, so a slow handler delays only its own connection. The HTTPDNS endpoints are
/// built on top of this; tests use it directly as a loopback origin.
public final class HTTPServer: Sendable {
    /// Where and how to listen.
    public struct Configuration: Sendable {
        /// The address to bind (IPv4 or IPv6). Default 127.0.0.1.
        public var address: HTTPDNSIPAddress = HTTPDNSIPAddress(bytes: [127, 0, 0, 1])!
        /// The port; 0 lets the system pick one (read it back from ``HTTPServer/port``). Default 0.
        public var port: Int = 0
        /// PEM certificate chain; with ``tlsKeyPEM`` the server speaks HTTPS only. Default nil.
        public var tlsCertificatePEM: String? = nil
        /// PEM private key for ``tlsCertificatePEM``. Default nil.
        public var tlsKeyPEM: String? = nil
        /// Larger request bodies get `413 Payload Too Large` (checked against `Content-Length` before
        /// reading, and while reading). Not applied to bodies given to a ``BodySink``. Default 1 MiB.
        public var maxRequestBodyBytes: Int = 1 << 20
        /// Seconds an idle connection stays open; 0 keeps it forever. Default 30.
        public var connectionTimeoutSeconds: Int = 30

        public init(address: HTTPDNSIPAddress = HTTPDNSIPAddress(bytes: [127, 0, 0, 1])!, port: Int = 0) {
            self.address = address
            self.port = port
        }
    }

    /// Produces the response for a request; runs on the connection's thread.
    public typealias Handler = @Sendable (Request) -> Response

    /// The settings the server started with.
    public let configuration: Configuration
    /// The port actually bound.
    public let port: Int
    let core: HTTPServerCore
    private let daemon: HTTPDNSLock<DaemonHandle?>

    /// The `MHD_Daemon *`; libmicrohttpd's daemon calls are thread-safe, and the mutex makes sure
    /// only one caller stops it.
    private struct DaemonHandle: @unchecked Sendable {
        let pointer: OpaquePointer
    }

    /// Starts listening; requests go to `handler`.
    ///
    /// - Throws: ``StartError`` when the address cannot be bound or TLS material is rejected.
    public convenience init(configuration: Configuration = .init(), handler: @escaping Handler) throws(StartError) {
        try self.init(configuration: configuration, bodySink: { _ in nil }, handler: { request, _ in handler(request) })
    }

    /// Starts listening; for each request `bodySink` may return a sink that receives the body
    /// incrementally (the request passed to it has an empty body), and `handler` gets that sink back
    /// once the body has ended.
    public init(
        configuration: Configuration,
        bodySink: @escaping @Sendable (Request) -> (any BodySink)?,
        handler: @escaping @Sendable (Request, (any BodySink)?) -> Response
    ) throws(StartError) {
        guard (0...65535).contains(configuration.port) else { throw StartError("port out of range") }
        guard (configuration.tlsCertificatePEM == nil) == (configuration.tlsKeyPEM == nil) else {
            throw StartError("TLS needs both a certificate and a key")
        }
        self.configuration = configuration
        let core = HTTPServerCore(configuration: configuration, bodySink: bodySink, handler: handler)
        self.core = core
        let context = Unmanaged.passRetained(core).toOpaque()
        var settings = httpdns_mhd_settings()
        settings.ipv6 = configuration.address.family == .v6 ? 1 : 0
        settings.tls_certificate = UnsafePointer(core.certificate)
        settings.tls_key = UnsafePointer(core.key)
        settings.connection_timeout = UInt32(clamping: configuration.connectionTimeoutSeconds)
        settings.handler = serverAccessHandler
        settings.handler_context = context
        settings.completed = serverRequestCompleted
        settings.completed_context = context
        settings.notify_connection = serverConnectionNotified
        settings.notify_connection_context = context
        settings.uri_log = serverURILogged
        settings.uri_log_context = context
        let started = Self.withSocketAddress(configuration.address, port: configuration.port) { address in
            settings.address = address
            return httpdns_mhd_start(&settings)
        }
        guard let started else {
            Unmanaged<HTTPServerCore>.fromOpaque(context).release()
            throw StartError("cannot listen on \(configuration.address.uriText):\(configuration.port)")
        }
        self.daemon = HTTPDNSLock(DaemonHandle(pointer: started))
        self.port = Int(httpdns_mhd_bound_port(started))
    }

    deinit {
        stop()
    }

    /// Closes the listening socket and every connection, waiting for running handlers to return.
    /// Safe to call more than once.
    public func stop() {
        guard let daemon = daemon.withLock({ value -> DaemonHandle? in
            defer { value = nil }
            return value
        }) else { return }
        MHD_stop_daemon(daemon.pointer)
        Unmanaged.passUnretained(core).release()
    }

    /// `http(s)://address:port`, for building request URLs in tests.
    public var baseURL: URL {
        let scheme = configuration.tlsCertificatePEM == nil ? "http" : "https"
        return URL(string: "\(scheme)://\(configuration.address.uriText):\(port)")!
    }

    /// TCP connections accepted so far (keep-alive reuse shows as fewer connections than requests).
    public var connectionCount: Int { core.connections.load(ordering: .relaxed) }

    /// TCP connections open right now (a client that cancelled shows up as a drop here).
    public var openConnectionCount: Int { core.openConnections.load(ordering: .relaxed) }

    /// Requests whose handler has run so far.
    public var requestCount: Int { core.requests.load(ordering: .relaxed) }

    private static func withSocketAddress<T>(
        _ address: HTTPDNSIPAddress, port: Int, _ body: (UnsafePointer<sockaddr>) -> T
    ) -> T {
        if address.family == .v4 {
            var storage = sockaddr_in()
            storage.sin_family = sa_family_t(AF_INET)
            storage.sin_port = UInt16(port).bigEndian
            withUnsafeMutableBytes(of: &storage.sin_addr) { $0.copyBytes(from: address.bytes) }
            return withUnsafePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1, body)
            }
        }
        var storage = sockaddr_in6()
        storage.sin6_family = sa_family_t(AF_INET6)
        storage.sin6_port = UInt16(port).bigEndian
        withUnsafeMutableBytes(of: &storage.sin6_addr) { $0.copyBytes(from: address.bytes) }
        return withUnsafePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1, body)
        }
    }
}
