import Foundation
import HTTPDNS
import HTTPDNSCore

/// The self-hostable HTTPDNS server: answers names from a zone, and optionally from upstream
/// resolvers, in every wire format the clients of this package speak.
///
/// Endpoints:
/// - `/d?dn=…` DNSPod plain text, with optional DES/AES enterprise encryption;
/// - `/{account}/d`, `/{account}/resolve`, `/{account}/sign_d`, `/{account}/sign_resolve` Alibaba
///   JSON (legacy API);
/// - `/ips?host=…` the self-hosted IP list (`{"ips":[…],"ttl":N}`);
/// - `/dns-query` DNS over HTTPS: RFC 8484 wire format (GET `?dns=`, POST) and Google-style JSON
///   (`?name=&type=`, also at `/resolve`).
///
/// Names the zone lacks go to ``Upstream/resolvers`` through an ``HTTPDNSEngine``, so
/// upstream answers are cached and concurrent questions for one name share one upstream request.
/// Requests are handled on libmicrohttpd's connection threads; upstream lookups block only their
/// own connection's thread while the engine works on the cooperative pool.
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

    /// Everything the service needs, with documented defaults.
    public struct Configuration: Sendable {
        /// The names answered here. Default empty.
        public var zone: HTTPDNSZone = .init()
        /// Upstream resolvers for other names. Default none.
        public var upstream: Upstream = .init()
        /// Address to listen on. Default 127.0.0.1.
        public var address: HTTPDNSIPAddress = HTTPDNSIPAddress(bytes: [127, 0, 0, 1])!
        /// Port to listen on; 0 lets the system pick (read ``HTTPDNSService/port``). Default 0.
        public var port: Int = 0
        /// PEM certificate chain; with ``tlsKeyPEM`` the service speaks HTTPS only. Default nil.
        public var tlsCertificatePEM: String? = nil
        /// PEM private key for ``tlsCertificatePEM``. Default nil.
        public var tlsKeyPEM: String? = nil
        /// Request bounds.
        public var limits: Limits = .init()
        /// DNSPod enterprise accounts.
        public var dnspod: DNSPod = .init()
        /// Alibaba accounts and secrets.
        public var alibaba: Alibaba = .init()
        /// Time source for signature expiry; tests inject ``HTTPDNSManualClock``.
        public var clock: any HTTPDNSClock = HTTPDNSSystemClock()
        /// Peers whose `X-Forwarded-For` (and, in the server, PROXY protocol header) is believed for
        /// the client's address: Alibaba's `client_ip`, DNSPod's `clientip=1` and the EDNS Client
        /// Subnet sent upstream. Default none: the client is the connection's peer.
        package var trustedProxies: HTTPDNSTrustedProxies = .init()

        public init(zone: HTTPDNSZone = .init()) {
            self.zone = zone
        }
    }

    /// The configuration the service was made with.
    public let configuration: Configuration
    let engine: HTTPDNSEngine?
    /// Names whose upstream lookup failed recently (see ``Upstream/failureTTL``).
    let upstreamFailures = HTTPDNSLock(HTTPDNSUpstreamFailureCache())
    private let server = HTTPDNSLock<HTTPServer?>(nil)

    /// Creates the service; nothing listens until ``start()``.
    public init(configuration: Configuration) {
        self.configuration = configuration
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
        stop()
    }

    /// Starts listening. Calling it while running does nothing.
    ///
    /// - Throws: ``HTTPDNSServiceError`` `.cannotListen` when the address cannot be bound or the TLS
    ///   material is rejected, `.invalidConfiguration` for a certificate without a key.
    public func start() throws(HTTPDNSServiceError) {
        guard (configuration.tlsCertificatePEM == nil) == (configuration.tlsKeyPEM == nil) else {
            throw HTTPDNSServiceError(.invalidConfiguration, "TLS needs both a certificate and a key")
        }
        var serverConfiguration = HTTPServer.Configuration(address: configuration.address, port: configuration.port)
        serverConfiguration.tlsCertificatePEM = configuration.tlsCertificatePEM
        serverConfiguration.tlsKeyPEM = configuration.tlsKeyPEM
        // RFC 8484 §6: DNS messages are at most 65,535 bytes; larger bodies get 413 before reading.
        serverConfiguration.maxRequestBodyBytes = Self.maxMessageBytes
        try server.withLock { (server: inout HTTPServer?) throws(HTTPDNSServiceError) in
            guard server == nil else { return }
            do {
                server = try HTTPServer(configuration: serverConfiguration) { [weak self] request in
                    self?.handle(request) ?? .text("service stopped\n", status: 503)
                }
            } catch let error as HTTPServer.StartError {
                throw HTTPDNSServiceError(.cannotListen, error.detail)
            } catch {
                throw HTTPDNSServiceError(.cannotListen, "\(error)")
            }
        }
    }

    /// Stops listening and closes every connection. Safe to call more than once.
    public func stop() {
        let running = server.withLock { server -> HTTPServer? in
            defer { server = nil }
            return server
        }
        running?.stop()
    }

    /// The bound port while running, else nil.
    public var port: Int? { server.withLock { $0?.port } }

    /// `http(s)://address:port` while running, else nil.
    public var baseURL: URL? { server.withLock { $0?.baseURL } }

    /// Largest DNS message accepted (RFC 8484 §6, the TCP message limit).
    public static let maxMessageBytes = 65_535

    /// Answers one request; what the listening server calls, public so that other HTTP front ends
    /// (and tests) can reuse the routing.
    public func handle(_ request: HTTPServer.Request) -> HTTPServer.Response {
        let path = request.path
        switch path {
        case "/dns-query":
            return handleDoH(request)
        case "/resolve":
            guard request.method == "GET" else { return Self.methodNotAllowed("GET") }
            return handleDoHJSON(request)
        case "/d":
            guard request.method == "GET" else { return Self.methodNotAllowed("GET") }
            return handleDNSPod(request)
        case "/ips":
            guard request.method == "GET" else { return Self.methodNotAllowed("GET") }
            return handleIPList(request)
        default:
            let parts = path.split(separator: "/", omittingEmptySubsequences: false)
            if parts.count == 3, parts[0].isEmpty, Self.alibabaEndpoints.contains(String(parts[2])) {
                guard request.method == "GET" else { return Self.methodNotAllowed("GET") }
                return handleAlibaba(request, account: String(parts[1]), endpoint: String(parts[2]))
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
