import Foundation
import HTTPDNS
import HTTPDNSCore
import HTTPServing

/// The self-hostable HTTPDNS server: answers names from a zone, and optionally from upstream
/// resolvers, in every wire format the clients of this package speak.
///
/// Endpoints:
/// - `/d?dn=…` DNSPod plain text, with optional DES/AES enterprise encryption;
/// - `/{account}/d`, `/{account}/resolve`, `/{account}/sign_d`, `/{account}/sign_resolve` Alibaba
///   JSON (legacy API);
/// - `/ips?host=…` the self-hosted IP list (`{"ips":[…],"ttl":N}`);
/// - `/dns-query` DNS over HTTPS: RFC 8484 wire format (GET `?dns=`, POST) and Google-style JSON
///   (`?name=&type=`, also at `/resolve`);
/// - `POST /report` failure reports from apps (``Reports``), which can take an origin out of the
///   answers or put it last in one view's.
///
/// Names the zone lacks go to ``Upstream/resolvers`` through an ``HTTPDNSEngine``, so
/// upstream answers are cached and concurrent questions for one name share one upstream request.
/// Requests arrive on the HTTP server's event loops (HTTP/1.1 and HTTP/2, plain and TLS; one loop
/// thread per online CPU) and are answered there when the zone has the name; names that need
/// upstream are fetched on the cooperative pool while the loops serve other connections. `/health` answers `200 alive`
/// while the process answers (liveness); `/ready` answers `200 ready` (`503 draining` once stopping: readiness).
///
/// ```swift
/// var configuration = HTTPDNSService.Configuration()
/// configuration.zone = try HTTPDNSZone(contentsOfFile: "zone.json")
/// let service = HTTPDNSService(configuration: configuration)
/// try service.start()
/// print(service.port!)
/// ```
public final class HTTPDNSService: Sendable {
    /// Upstream resolvers for names the zone lacks.
    public struct Upstream: Sendable {
        /// Resolvers tried in order (any ``HTTPDNSResolver``, for example from
        /// `HTTPDNSProviderSpec(parsing:).makeResolver()`). Default none: such names are NXDOMAIN.
        public var resolvers: [any HTTPDNSResolver] = []
        /// Which upstream addresses are passed on. Default: no loopback, no private space (a test
        /// bed on 127.0.0.0/8 sets `allowPrivate`).
        public var hygiene: HTTPDNSAnswerHygiene = .init()
        /// Time limits for upstream lookups. Default the engine's (1.5 s per resolver, 2 s in all).
        public var timeouts: HTTPDNSConfiguration.Timeouts = .init()
        /// Cache settings (TTL floor and ceiling, capacity). Default the engine's.
        public var cache: HTTPDNSCacheSettings = .init()
        /// How long a name whose upstream lookup failed is answered `SERVFAIL` / 502 at once, without
        /// asking again (RFC 9520 negative caching of resolution failures). Default 5 s; zero turns
        /// it off. A stale cached answer, when there is one, is still preferred to the failure.
        public var failureTTL: Duration = .seconds(5)
        /// Send the client's subnet (/24 IPv4, /56 IPv6; never a private or loopback address) to
        /// upstreams that speak DNS (plain DNS, DoH wire format) as EDNS Client Subnet (RFC 7871),
        /// so that they can pick addresses near the client; answers are then cached per subnet.
        /// Default true.
        public var sendsClientSubnet: Bool = true

        public init(resolvers: [any HTTPDNSResolver] = []) {
            self.resolvers = resolvers
        }
    }

    /// Bounds on what one request may ask for.
    public struct Limits: Sendable, Hashable {
        /// Most names in one DNSPod batch (`dn=a,b,…`). Default 10, the client's default.
        public var maxDNSPodBatch: Int = 10
        /// Most names in one Alibaba batch; more is `400 LimitExceeded`. Default 5, the vendor's.
        public var maxAlibabaBatch: Int = 5
        /// Seconds a negative answer may be cached (SOA MINIMUM and `max-age`). Default 60.
        public var negativeTTL: Int = 60
        /// Longest CNAME chain followed inside the zone. Default 8.
        public var maxCNAMEChain: Int = 8

        public init() {}
    }

    /// DNSPod enterprise mode.
    public struct DNSPod: Sendable, Hashable {
        /// Account id → account key, for `id=…&alg=des|aes` requests (the key as text, as the
        /// console shows it: DES uses its first 8 bytes, AES needs 16, 24 or 32). Default none:
        /// encrypted requests get `401`.
        public var accountKeys: [String: String] = [:]

        public init() {}
    }

    /// Alibaba accounts.
    public struct Alibaba: Sendable, Hashable {
        /// Account ids served; `nil` serves any id. Default nil.
        public var accounts: Set<String>? = nil
        /// Account id → signing secret for `sign_d`/`sign_resolve`. Default none: signed requests
        /// get `403 InvalidSignature`.
        public var secrets: [String: String] = [:]

        public init() {}
    }

    /// One address to listen on.
    public struct Listener: Sendable, Hashable {
        /// The address to bind. Default 127.0.0.1.
        public var address: HTTPDNSIPAddress = HTTPDNSIPAddress(bytes: [127, 0, 0, 1])!
        /// The port; 0 lets the system pick (read ``HTTPDNSService/ports``). Default 0.
        public var port: Int = 0
        /// PEM certificate chain; with ``tlsKeyPEM`` this listener speaks HTTPS (HTTP/2 or HTTP/1.1
        /// by ALPN). Default nil: plain HTTP/1.1 and h2c.
        public var tlsCertificatePEM: String? = nil
        /// PEM private key for ``tlsCertificatePEM``. Default nil.
        public var tlsKeyPEM: String? = nil
        /// What the listener speaks. Default ``Kind/http``.
        public var kind: Kind = .http

        /// What a listener speaks.
        public enum Kind: Sendable, Hashable {
            /// HTTP: HTTP/1.1 and h2c, or with a certificate HTTP/2 and HTTP/1.1 (ALPN).
            case http
            /// DNS over TLS (RFC 7858, port 853 by convention): needs a certificate. Each query is
            /// answered as the DoH wire endpoint answers it (``Connections/dotIdleTimeout``,
            /// ``Connections/maxDoTQueriesInFlight``).
            case dnsOverTLS
            /// DNS over QUIC (RFC 9250, UDP port 853 by convention): needs a certificate. Each query,
            /// on a QUIC stream of its own, is answered as the DoH wire endpoint answers it;
            /// ``Connections/dotIdleTimeout`` is QUIC's idle timeout and
            /// ``Connections/maxDoTQueriesInFlight`` the streams one connection may have open.
            case dnsOverQUIC
        }

        public init(address: HTTPDNSIPAddress = HTTPDNSIPAddress(bytes: [127, 0, 0, 1])!, port: Int = 0, kind: Kind = .http) {
            self.address = address
            self.port = port
            self.kind = kind
        }
    }

    /// Bounds on connections, so that no client can take the service from the others; past a bound
    /// the service refuses visibly (plain HTTP: `503`, TLS: closed; HTTP/2 GOAWAY on shutdown).
    public struct Connections: Sendable, Hashable {
        /// Open connections in all. Default 10,000.
        public var maxConnections: Int = 10_000
        /// Open connections from one client address. Default 1,000.
        public var maxConnectionsPerClient: Int = 1_000
        /// HTTP/1: deadline for a request's head and body (slowloris), from the moment the connection
        /// may send it; also the idle time of a keep-alive connection. A connection cut with a request
        /// unfinished counts as shed (`deadline`; a plain client reads `408`). Default 10 s.
        public var requestTimeout: Duration = .seconds(10)
        /// Deadline for a TLS handshake. Default 10 s.
        public var handshakeTimeout: Duration = .seconds(10)
        /// HTTP/2: idle time of a connection. Default 30 s.
        public var idleTimeout: Duration = .seconds(30)
        /// DNS over TLS: how long a connection with no query in hand stays open (RFC 7766 §6.2.3
        /// and RFC 7858 §3.4 ask servers to close idle connections after seconds), and the deadline
        /// for the rest of a query begun (cut, counted as shed: `deadline`). DNS over QUIC: the
        /// connection's idle timeout (QUIC's `max_idle_timeout`). Default 10 s.
        public var dotIdleTimeout: Duration = .seconds(10)
        /// DNS over TLS: queries of one connection being answered at once; at this many the
        /// connection is not read until one is answered (pipelined queries wait in TCP, none is
        /// refused). DNS over QUIC: the streams (queries) one connection may have open at once
        /// (`initial_max_streams_bidi`, given back as each closes). Default 64.
        public var maxDoTQueriesInFlight: Int = 64
        /// HTTP/2: requests of one connection handled at once (at most 100, what h2o advertises);
        /// more are answered `503` with `Retry-After` at once and count as shed (`streams`). Default 100.
        public var maxConcurrentStreams: Int = 100
        /// On ``HTTPDNSService/stop()``: how long the drain may answer requests in flight or on their way
        /// (see `HTTPServer.stop(drain:)`); what remains then is closed. Default 5 s.
        public var drainTimeout: Duration = .seconds(5)
        /// On ``HTTPDNSService/stop()``: how long `/ready` answers `503 draining` before the drain
        /// begins, while the listeners still accept and every other request is answered as before.
        /// A balancer's health check is a new connection each time, which a draining listener no
        /// longer takes (its SYN waits to be retried, a second later, and then finds the port closed):
        /// longer than the balancer's checks take to see the 503 (interval × fall), it stops sending
        /// before the listeners close. Default 0: the drain begins at once.
        public var drainDelay: Duration = .zero
        /// `SO_REUSEPORT`, so that several instances share a port. Default false.
        public var reusePort: Bool = false
        /// Event-loop threads, each serving its share of the connections (1 to 256). Default
        /// ``defaultThreads``: one per CPU this process may run on but one, at least one (set it to the
        /// CPU count on a machine that only serves, with clients elsewhere).
        public var threads: Int = Connections.defaultThreads

        /// One loop per CPU this process may run on (its affinity mask counts) but one, at least
        /// one. The CPU left over takes what runs beside the loops (upstream lookups, the access-log
        /// writer, the kernel's network work, a local client): a loop that has to share a CPU with
        /// them is set aside for whole time slices, and every connection it holds waits that long.
        /// Measured on 2 CPUs with h2load beside the server: two loops answered about 15 % more
        /// queries at c=256 than one, with a p99 about 20 % longer, past dnsdist's.
        public static let defaultThreads = loops(forCPUs: HTTPDNSProcessors.usable)

        /// The default loop count on `cpus` CPUs: all but one, at least one.
        package static func loops(forCPUs cpus: Int) -> Int {
            max(1, cpus - 1)
        }

        public init() {}
    }

    /// Origin health checks (the zone's `"check"` members, see ``HTTPDNSHealthCheck``).
    public struct Health: Sendable, Hashable {
        /// The CAs that verify `tls` and `https` checks (`--health-ca FILE` is `.caFile(FILE)`).
        /// Verification is always on. Default `.system`.
        public var trust: HTTPDNSTrust = .system
        /// Most probes running at once, scheduled and on-demand together; due probes wait for a
        /// free slot (1...10,000). Default 64.
        public var maxProbesInFlight: Int = 64

        public init() {}
    }

    /// The operator's endpoints.
    public struct Admin: Sendable, Hashable {
        /// The bearer token `GET /status` requires (`Authorization: Bearer TOKEN`; missing: 401,
        /// wrong: 403): 16 to 512 printable ASCII characters without spaces. Default nil: `/status`
        /// answers 404.
        public var token: String? = nil

        public init() {}
    }

    /// Everything the service needs, with documented defaults.
    public struct Configuration: Sendable {
        /// The names answered here. Default empty.
        public var zone: HTTPDNSZone = .init()
        /// Upstream resolvers for other names. Default none.
        public var upstream: Upstream = .init()
        /// Where to listen; the first listener is what ``address``, ``port`` and the TLS properties
        /// describe. Default one plain listener on 127.0.0.1, port picked by the system.
        public var listeners: [Listener] = [Listener()]
        /// Connection limits and deadlines.
        public var connections: Connections = .init()
        /// TLS session ticket keys shared with the other instances of a fleet, for every TLS
        /// listener (``reloadTLSTicketKeys(_:)`` replaces them). Default nil: OpenSSL's own key,
        /// random per process.
        public var tlsTicketKeys: HTTPDNSTLSTicketKeys? = nil
        /// Request bounds.
        public var limits: Limits = .init()
        /// DNSPod enterprise accounts.
        public var dnspod: DNSPod = .init()
        /// Alibaba accounts and secrets.
        public var alibaba: Alibaba = .init()
        /// Time source for signature expiry; tests inject a clock they move by hand.
        public var clock: any HTTPDNSClock = HTTPDNSSystemClock()
        /// Peers whose `X-Forwarded-For` (and, in the server, PROXY protocol header) is believed for
        /// the client's address: Alibaba's `client_ip`, DNSPod's `clientip=1` and the EDNS Client
        /// Subnet sent upstream. Default none: the client is the connection's peer.
        public var trustedProxies: HTTPDNSTrustedProxies = .init()
        /// Counters behind `/metrics` (Prometheus text); pass your own to read them in-process
        /// (``HTTPDNSServerMetrics/render()``). Default a fresh set.
        public var metrics: HTTPDNSServerMetrics = .init()
        /// One JSON line per answered request, when given (``HTTPDNSAccessLog``; call its
        /// ``HTTPDNSAccessLog/close(timeout:)`` after stopping the service). Default nil.
        public var accessLog: HTTPDNSAccessLog? = nil
        /// Answers by client network: the views zone entries may give records for. Default none:
        /// every client gets the default view (the entries' own records).
        public var views: HTTPDNSViews = .init()
        /// Origin health checks: trusted CAs and the bound on probes in flight.
        public var health: Health = .init()
        /// The admin token of `/status`. Default none (`/status` is 404).
        public var admin: Admin = .init()
        /// Failure reports from apps at `POST /report` (``Reports``). Default: no token; accounts
        /// with secrets above may sign reports.
        public var reports: Reports = .init()

        public init(zone: HTTPDNSZone = .init()) {
            self.zone = zone
        }

        /// The first listener's address. Default 127.0.0.1.
        public var address: HTTPDNSIPAddress {
            get { listeners[0].address }
            set { listeners[0].address = newValue }
        }

        /// The first listener's port; 0 lets the system pick. Default 0.
        public var port: Int {
            get { listeners[0].port }
            set { listeners[0].port = newValue }
        }

        /// The first listener's PEM certificate chain (HTTPS with ``tlsKeyPEM``). Default nil.
        public var tlsCertificatePEM: String? {
            get { listeners[0].tlsCertificatePEM }
            set { listeners[0].tlsCertificatePEM = newValue }
        }

        /// The first listener's PEM private key. Default nil.
        public var tlsKeyPEM: String? {
            get { listeners[0].tlsKeyPEM }
            set { listeners[0].tlsKeyPEM = newValue }
        }
    }

    /// The configuration the service was made with (the zone in it is the first one; see ``zone``).
    public let configuration: Configuration
    let engine: HTTPDNSEngine?
    /// Names whose upstream lookup failed recently (see ``Upstream/failureTTL``).
    let upstreamFailures = HTTPDNSLock(HTTPDNSUpstreamFailureCache())
    private let server = HTTPDNSLock<HTTPServer?>(nil)
    /// The zone and views answered now, with the encoded wire answers made from them and the origins
    /// down. A new zone, new views or a new health state come with a new, empty wire-answer cache: a
    /// kept answer never outlives the zone, views and down set it was made from.
    private let currentZone: HTTPDNSLock<
        (zone: HTTPDNSZone, views: HTTPDNSViews, wireAnswers: HTTPDNSWireAnswerCache, health: HTTPDNSHealthSnapshot)
    >
    private let draining = HTTPDNSLock(false)
    /// What `/ready` asks besides draining (zones still loading, expired, or served from disk).
    private let readiness = HTTPDNSLock<(@Sendable () -> Readiness)?>(nil)
    /// Probes the zone's checked addresses while the service runs.
    package let health: HTTPDNSHealthMonitor
    /// Failure reports and the decisions made from them.
    package let reportState: HTTPDNSReports

    /// Creates the service; nothing listens until ``start()``.
    public init(configuration: Configuration) {
        self.configuration = configuration
        let currentZone = HTTPDNSLock((
            zone: configuration.zone, views: configuration.views, wireAnswers: HTTPDNSWireAnswerCache(), health: HTTPDNSHealthSnapshot()))
        self.currentZone = currentZone
        self.health = HTTPDNSHealthMonitor(
            maxInFlight: configuration.health.maxProbesInFlight, prober: HTTPDNSHealthProber(trust: configuration.health.trust),
            metrics: configuration.metrics
        ) { snapshot in
            // Snapshots may arrive out of order; only a newer one replaces the state (and the kept answers).
            currentZone.withLock { current in
                guard snapshot.generation > current.health.generation else { return }
                current = (current.zone, current.views, HTTPDNSWireAnswerCache(), snapshot)
            }
        }
        health.update(targets: HTTPDNSHealthTargets(zone: configuration.zone))
        // Reports meet the rest here: the server's own probe is the health prober (the zone's check
        // for that address, else a TCP connect), a reporter's view is the views' answer for its
        // address, and a decision drops the kept wire answers (they may lead with the address).
        var reportSettings = configuration.reports
        if reportSettings.probe == nil {
            let health = self.health
            reportSettings.probe = HTTPDNSReportClosureProbe { address, port, host in
                await health.probe(address: address, port: port, host: host).passed
            }
        }
        if reportSettings.view == nil {
            reportSettings.view = { address in
                let matcher = currentZone.withLock { $0.views.matcher }
                return matcher.names[matcher.match(address).index]
            }
        }
        self.reportState = HTTPDNSReports(
            settings: reportSettings,
            authenticator: HTTPDNSReportAuthenticator(
                tokens: configuration.reports.tokens, alibaba: configuration.alibaba, dnspod: configuration.dnspod),
            counters: configuration.metrics.reports, clock: configuration.clock
        ) {
            currentZone.withLock { $0.wireAnswers = HTTPDNSWireAnswerCache() }
        }
        configuration.metrics.viewsLoaded(configuration.views.names)
        if configuration.upstream.resolvers.isEmpty {
            self.engine = nil
        } else {
            var engineConfiguration = HTTPDNSConfiguration(resolvers: configuration.upstream.resolvers)
            // The server must not leak names to the machine's resolver: upstreams only.
            engineConfiguration.failover.httpdnsOnly = true
            engineConfiguration.hygiene = configuration.upstream.hygiene
            engineConfiguration.timeouts = configuration.upstream.timeouts
            engineConfiguration.cache.policy = configuration.upstream.cache
            engineConfiguration.clock = configuration.clock
            self.engine = HTTPDNSEngine(configuration: engineConfiguration)
        }
    }

    deinit {
        health.stop()
        reportState.stopSharing()
        server.withLock { $0 }?.stop(drain: .zero)
    }

    /// Starts listening on every listener. Calling it while running does nothing.
    ///
    /// - Throws: ``HTTPDNSServiceError`` `.cannotListen` when an address cannot be bound (the
    ///   detail names it and the errno, e.g. `Address already in use (EADDRINUSE)`) or the TLS
    ///   material is rejected (e.g. a key that does not match its certificate),
    ///   `.invalidConfiguration` for a certificate without a key, `.invalidZone` for a zone entry
    ///   naming a view ``Configuration/views`` lacks.
    public func start() throws(HTTPDNSServiceError) {
        try validateHealthAndAdmin()
        let (zone, views, _, _) = currentZone.withLock { $0 }
        try views.check(zone)
        for listener in configuration.listeners where (listener.tlsCertificatePEM == nil) != (listener.tlsKeyPEM == nil) {
            throw HTTPDNSServiceError(.invalidConfiguration, "TLS needs both a certificate and a key")
        }
        for listener in configuration.listeners where listener.kind == .dnsOverTLS && listener.tlsCertificatePEM == nil {
            throw HTTPDNSServiceError(.invalidConfiguration, "DNS over TLS needs a certificate and a key")
        }
        for listener in configuration.listeners where listener.kind == .dnsOverQUIC && listener.tlsCertificatePEM == nil {
            throw HTTPDNSServiceError(.invalidConfiguration, "DNS over QUIC needs a certificate and a key")
        }
        try configuration.reports.validate()
        var serverConfiguration = HTTPServer.Configuration()
        serverConfiguration.listeners = configuration.listeners.map { listener in
            var converted = HTTPServer.Listener(address: listener.address, port: listener.port)
            converted.tlsCertificatePEM = listener.tlsCertificatePEM
            converted.tlsKeyPEM = listener.tlsKeyPEM
            if listener.kind == .dnsOverTLS { converted.messageStream = Self.dotMessageStream }
            if listener.kind == .dnsOverQUIC {
                converted.messageStream = Self.dotMessageStream
                converted.isQUIC = true
            }
            return converted
        }
        // RFC 8484 §6: DNS messages are at most 65,535 bytes, report batches 64 KiB; larger bodies
        // get 413 before reading (and a DoH body of exactly 64 KiB gets it from the DoH handler).
        serverConfiguration.maxRequestBodyBytes = max(Self.maxMessageBytes, HTTPDNSReportBatch.maxBodyBytes)
        let connections = configuration.connections
        serverConfiguration.limits.maxConnections = connections.maxConnections
        serverConfiguration.limits.maxConnectionsPerClient = connections.maxConnectionsPerClient
        serverConfiguration.limits.requestTimeout = connections.requestTimeout
        serverConfiguration.limits.handshakeTimeout = connections.handshakeTimeout
        serverConfiguration.limits.idleTimeout = connections.idleTimeout
        serverConfiguration.limits.maxConcurrentStreams = connections.maxConcurrentStreams
        serverConfiguration.limits.messageIdleTimeout = connections.dotIdleTimeout
        serverConfiguration.limits.maxMessagesInFlight = connections.maxDoTQueriesInFlight
        serverConfiguration.reusePort = connections.reusePort
        serverConfiguration.tlsTicketKeys = configuration.tlsTicketKeys?.keys
        serverConfiguration.threads = connections.threads
        serverConfiguration.connectionEvents = Self.connectionEvents(configuration.metrics)
        serverConfiguration.proxyProtocol = Self.proxyProtocol(trusting: configuration.trustedProxies)
        try server.withLock { (server: inout HTTPServer?) throws(HTTPDNSServiceError) in
            guard server == nil else { return }
            draining.withLock { $0 = false }
            do throws(HTTPServer.StartError) {
                server = try HTTPServer(configuration: serverConfiguration, bodySink: nil) { [weak self] request, _, exchange in
                    guard let self else { return exchange.respond(.text("service stopped\n", status: 503)) }
                    self.respond(to: request, exchange: exchange)
                }
            } catch {
                throw HTTPDNSServiceError(.cannotListen, error.detail)
            }
        }
        health.start(targets: HTTPDNSHealthTargets(zone: zone))
        reportState.startSharing()
    }

    /// Says `503 draining` at `/ready` for ``Connections/drainDelay`` (and blocks that long), then
    /// stops accepting connections, lets requests in flight finish within
    /// ``Connections/drainTimeout``, and closes every connection. Safe to call more than once.
    public func stop() {
        let first = draining.withLock { draining in
            defer { draining = true }
            return !draining
        }
        let delay = configuration.connections.drainDelay
        if first, delay > .zero, server.withLock({ $0 != nil }) {
            // Everything is still answered meanwhile (origin health included): only /ready changed.
            Thread.sleep(forTimeInterval: Double(delay.components.seconds) + Double(delay.components.attoseconds) / 1e18)
        }
        health.stop()
        reportState.stopSharing()
        let running = server.withLock { server -> HTTPServer? in
            defer { server = nil }
            return server
        }
        running?.stop(drain: configuration.connections.drainTimeout)
    }

    /// Whether ``stop()`` has begun (`/ready` says `503 draining`).
    var isDraining: Bool { draining.withLock { $0 } }

    /// The bound port of the first listener while running, else nil.
    public var port: Int? { server.withLock { $0?.port } }

    /// The bound port of every listener, in order, while running; else empty.
    public var ports: [Int] { server.withLock { $0?.ports ?? [] } }

    /// `http(s)://address:port` of the first listener while running, else nil.
    package var baseURL: URL? { server.withLock { $0?.baseURL } }

    /// The zone answered from now on.
    public var zone: HTTPDNSZone { currentZone.withLock { $0.zone } }

    /// The views answered from now on.
    public var views: HTTPDNSViews { currentZone.withLock { $0.views } }

    /// Replaces the zone, and the views when given, at once and together: requests already started
    /// finish with the old ones, and no request sees the new zone with the old views. Checked
    /// addresses that remain (same address, same check) keep their health; new ones start up.
    ///
    /// - Parameters:
    ///   - zone: the new zone.
    ///   - views: the new views (read and checked whole when made); nil keeps the current ones.
    /// - Throws: ``HTTPDNSServiceError`` `.invalidZone` when an entry of `zone` names a view the
    ///   views lack; nothing is replaced then.
    public func reload(zone: HTTPDNSZone, views: HTTPDNSViews? = nil) throws(HTTPDNSServiceError) {
        let wireAnswers = HTTPDNSWireAnswerCache()
        try currentZone.withLock { (current) throws(HTTPDNSServiceError) in
            let views = views ?? current.views
            try views.check(zone)
            current = (zone, views, wireAnswers, current.health)
        }
        if let views { metrics.viewsLoaded(views.names) }
        health.update(targets: HTTPDNSHealthTargets(zone: zone))
    }

    /// A request's view of the names, starting from the current zone and health state.
    private func startLookups() -> HTTPDNSServiceLookups {
        let (zone, views, wireAnswers, health) = currentZone.withLock { $0 }
        return HTTPDNSServiceLookups(zone: zone, views: views.matcher, wireAnswers: wireAnswers, health: health)
    }

    /// What `/ready` reports besides draining.
    package struct Readiness: Sendable, Hashable {
        /// Why the service is not ready (`loading example.com`); empty: ready.
        package var notReady: [String] = []
        /// Said after `ready` when ready (`example.com serial 7 from disk, …`).
        package var notes: [String] = []

        package init(notReady: [String] = [], notes: [String] = []) {
            self.notReady = notReady
            self.notes = notes
        }
    }

    /// Makes `/ready` answer `503` with the reasons `check` gives while it gives any (zones that a
    /// secondary has not loaded yet, or that expired), else `200 ready` and its notes, a line
    /// each; nil: ready once listening.
    package func setReadiness(_ check: (@Sendable () -> Readiness)?) {
        readiness.withLock { $0 = check }
    }

    /// Wire answers kept for the current zone (for tests).
    package var keptWireAnswers: Int { currentZone.withLock { $0.wireAnswers }.count }

    /// Replaces the certificate and key of listener `index` for new connections.
    ///
    /// - Throws: ``HTTPDNSServiceError`` `.invalidConfiguration` naming what is wrong (the old pair stays).
    public func reloadTLS(listener index: Int, certificatePEM: String, keyPEM: String) throws(HTTPDNSServiceError) {
        guard let running = server.withLock({ $0 }) else { return }
        guard running.configuration.listeners.indices.contains(index), running.configuration.listeners[index].isTLS else {
            throw HTTPDNSServiceError(.invalidConfiguration, "listener \(index) does not speak TLS")
        }
        do throws(HTTPServer.StartError) {
            try running.reloadTLS(listener: index, certificatePEM: certificatePEM, keyPEM: keyPEM)
        } catch {
            throw HTTPDNSServiceError(.invalidConfiguration, error.detail)
        }
    }

    /// Replaces the TLS session ticket keys of every TLS listener at once.
    ///
    /// - Throws: ``HTTPDNSServiceError`` `.invalidConfiguration` when the service started without
    ///   ``Configuration/tlsTicketKeys`` (the old keys stay).
    public func reloadTLSTicketKeys(_ keys: HTTPDNSTLSTicketKeys) throws(HTTPDNSServiceError) {
        guard let running = server.withLock({ $0 }) else { return }
        do throws(HTTPServer.StartError) {
            try running.reloadTLSTicketKeys(keys.keys)
        } catch {
            throw HTTPDNSServiceError(.invalidConfiguration, error.detail)
        }
    }

    /// Connection counters of the running server (open, accepted, refused at a limit), for metrics.
    package var connectionCounts: (open: Int, accepted: Int, refused: Int) {
        server.withLock { server in
            guard let server else { return (0, 0, 0) }
            return (server.openConnectionCount, server.connectionCount, server.refusedConnectionCount)
        }
    }

    /// Largest DNS message accepted (RFC 8484 §6, the TCP message limit).
    package static let maxMessageBytes = 65_535

    /// Answers one request, blocking the calling thread while upstream lookups run; for tests and
    /// other front ends. The listening server uses ``respond(to:exchange:)``, which never blocks.
    package func handle(_ request: HTTPServer.Request) -> HTTPServer.Response {
        let lookups = startLookups()
        let first = route(request, lookups)
        guard !lookups.missing.isEmpty else { return first }
        let keys = lookups.missing
        let limit = configuration.upstream.timeouts.httpdnsBudget.inSeconds + 10
        let known = Self.waitFor(seconds: limit, fallback: [:]) { await self.fetchMissing(keys) }
        return route(request, HTTPDNSServiceLookups(
            zone: lookups.zone, views: lookups.views, wireAnswers: lookups.wireAnswers, health: lookups.health, known: known))
    }

    /// Answers one request from the loop thread: at once when the zone (or nothing) answers it,
    /// else after fetching the missing names on the cooperative pool; the loop goes on meanwhile.
    package func respond(to request: HTTPServer.Request, exchange: HTTPServer.Exchange) {
        let started = ContinuousClock.now
        let lookups = startLookups()
        if request.path == "/report" { return respondToReport(request, lookups, exchange: exchange, since: started) }
        let first = route(request, lookups)
        guard !lookups.missing.isEmpty else {
            observe(request, first, lookups, since: started)
            return exchange.respond(first)
        }
        let keys = lookups.missing
        let (zone, views, wireAnswers, health) = (lookups.zone, lookups.views, lookups.wireAnswers, lookups.health)
        Task {
            let known = await self.fetchMissing(keys)
            let second = HTTPDNSServiceLookups(zone: zone, views: views, wireAnswers: wireAnswers, health: health, known: known)
            let response = self.route(request, second)
            self.observe(request, response, second, since: started)
            exchange.respond(response)
        }
    }

    /// Picks the endpoint.
    func route(_ request: HTTPServer.Request, _ lookups: HTTPDNSServiceLookups) -> HTTPServer.Response {
        let path = request.path
        switch path {
        case "/dns-query":
            return handleDoH(request, lookups)
        case "/resolve":
            guard request.method == "GET" else { return Self.methodNotAllowed("GET") }
            return handleDoHJSON(request, lookups)
        case "/d":
            guard request.method == "GET" else { return Self.methodNotAllowed("GET") }
            return handleDNSPod(request, lookups)
        case "/ips":
            guard request.method == "GET" else { return Self.methodNotAllowed("GET") }
            return handleIPList(request, lookups)
        case "/report":
            return handleReport(request, lookups)
        case "/metrics":
            guard request.method == "GET" else { return Self.methodNotAllowed("GET") }
            return Self.json(configuration.metrics.render(), contentType: HTTPDNSServerMetrics.contentType)
        case "/status":
            guard request.method == "GET" else { return Self.methodNotAllowed("GET") }
            return handleStatus(request)
        case "/health":
            // Liveness: the process answers, draining or not (a supervisor must not restart a
            // process that is finishing its requests).
            return Self.text("alive\n")
        case "/ready":
            // Readiness: listening with its zones loaded; 503 while draining, so balancers move on.
            if draining.withLock({ $0 }) { return Self.text("draining\n", status: 503) }
            let state = readiness.withLock({ $0 })?() ?? Readiness()
            if !state.notReady.isEmpty { return Self.text(state.notReady.map { $0 + "\n" }.joined(), status: 503) }
            return Self.text((["ready"] + state.notes).map { $0 + "\n" }.joined())
        default:
            let parts = path.split(separator: "/", omittingEmptySubsequences: false)
            if parts.count == 3, parts[0].isEmpty, Self.alibabaEndpoints.contains(String(parts[2])) {
                guard request.method == "GET" else { return Self.methodNotAllowed("GET") }
                return handleAlibaba(request, account: String(parts[1]), endpoint: String(parts[2]), lookups)
            }
            return .text("not found\n", status: 404)
        }
    }

    static let alibabaEndpoints: Set<String> = ["d", "resolve", "sign_d", "sign_resolve"]

    static func methodNotAllowed(_ allowed: String) -> HTTPServer.Response {
        var response = HTTPServer.Response.text("method not allowed\n", status: 405)
        response.headers.append(HTTPServer.Header(name: "Allow", value: allowed))
        return response
    }
}
