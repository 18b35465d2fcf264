import Foundation
import HTTPDNS
import HTTPDNSCore
import HTTPDNSTransport
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Sends HTTP requests to addresses the engine chose, with the real host in `Host`, SNI and
/// certificate verification: IP direct connect without breaking HTTPS.
///
/// The path of one request: the engine resolves the host (cache → HTTPDNS providers → LocalDNS);
/// the transport connects to the addresses, fastest remembered first, each attempt pinned with
/// `CURLOPT_CONNECT_TO` and started 250 ms after the previous one unless that one connected (RFC 8305,
/// IPv6 and IPv4 alternating); an address that refuses or times out is cooled down in the engine
/// (and reported, with ``Configuration/failureReports``); when every address of a cached answer
/// failed, HTTPDNS is asked once more bypassing the cache, then LocalDNS's addresses are tried,
/// then — for a blocked domain — a redirect address from the app's own IP-list endpoint (seed 003),
/// used directly for its TTL afterwards. With a proxy set in
/// the environment the request goes through it unpinned (``Configuration/proxyPolicy``). A
/// certificate that does not verify is a hard failure and is never retried elsewhere with weaker checks.
public final class HTTPDNSClient: Sendable {
    /// Settings of one client.
    public struct Configuration: Sendable {
        /// Connection time limit per address. Default 5 s.
        public var connectTimeout: Duration = .seconds(5)
        /// Stall limit: fail when no byte moves for this long. Default 60 s.
        public var idleTimeout: Duration = .seconds(60)
        /// Limit for one whole exchange with one address (connect to last byte). Default nil: none.
        public var requestTimeout: Duration? = nil
        /// Where to ask for a redirect address when a host cannot be found or connected (the
        /// domain-block redirect, seed 003); usually the app's IP-list endpoint, made with
        /// `HTTPDNSProviderSpec(kind: .ips, location: URL).makeResolver()`.
        /// Default nil: no redirect.
        public var blockRedirect: (any HTTPDNSResolver)? = nil
        /// Cookies sent and stored by ``HTTPDNSClient/data(for:)`` and ``HTTPDNSClient/bytes(for:)``
        /// (the URL protocol uses the session's instead). Default nil: no cookie handling.
        public var cookieStorage: HTTPCookieStorage? = nil
        /// Most redirects followed by ``HTTPDNSClient/data(for:)`` and ``HTTPDNSClient/bytes(for:)``. Default 20.
        public var maximumRedirects: Int = 20
        /// Connection racing (Happy Eyeballs v2, RFC 8305 §5): when an address has not connected after
        /// this long, the next one is tried alongside it, and the first connection made carries the
        /// request (the others are dropped before a byte of the request is sent). At least 10 ms.
        /// nil tries addresses one after another, each when the previous failed. Default 250 ms.
        ///
        /// Either way the connect time of every new connection is remembered per address by the
        /// engine and later attempts try the fastest address first.
        public var connectionAttemptDelay: Duration? = .milliseconds(250)
        /// What to do for a protected host when a proxy is configured for it in the environment.
        /// Default ``HTTPDNSProxyPolicy/respect``: through the proxy, unpinned.
        public var proxyPolicy: HTTPDNSProxyPolicy = .respect
        /// Told of each address that failed to connect, and of failure reports dropped. Default nil: nobody.
        public var monitor: (any HTTPDNSConnectionMonitor)? = nil
        /// Where to report the addresses of protected hosts that failed to connect (host, address,
        /// port, error class and time, nothing of the request), in batches from a task of the
        /// client's own; see ``HTTPDNSFailureReports``. Default nil: no reports.
        public var failureReports: HTTPDNSFailureReports? = nil
        /// The environment the proxy settings are read from; nil reads the process's when the client
        /// is made. For tests.
        package var proxyEnvironment: [String: String]? = nil

        public init() {}
    }

    /// The resolution engine.
    public let engine: HTTPDNSEngine
    /// The libcurl transport.
    package let transport: HTTPTransport
    /// The settings the client was made with.
    public let configuration: Configuration
    /// The proxy variables, read once when the client is made.
    let proxies: ProxyEnvironment
    /// The failover from a host to an address that connects (shared in kind with the loopback proxy).
    let connector: HTTPDNSConnector

    /// The sender of ``Configuration/failureReports``, nil when they are off; for tests.
    package var failureReporter: FailureReporter? { connector.reporter }
    /// Attempts raced past that are still connecting (their failure is booked when it comes);
    /// cancelled when the client is released.
    package let racedPast = RacedPastAttempts()
    /// The last response head made into an `HTTPURLResponse`, given again when a head repeats it.
    let responses = ResponseMemo()

    /// A client sending through `engine`'s answers; origins are verified against the engine's
    /// ``HTTPDNSConfiguration/trust``. The proxy environment variables are read here.
    public convenience init(engine: HTTPDNSEngine, configuration: Configuration = .init()) {
        self.init(engine: engine, transport: .shared, configuration: configuration)
    }

    package init(engine: HTTPDNSEngine, transport: HTTPTransport, configuration: Configuration = .init()) {
        self.engine = engine
        self.transport = transport
        self.configuration = configuration
        // RFC 8305 §5: the attempt delay is never below 10 ms; an unmeasured address counts as it.
        let attemptDelay = configuration.connectionAttemptDelay.map { max($0, .milliseconds(10)) }
        self.connector = HTTPDNSConnector(
            engine: engine, blockRedirect: configuration.blockRedirect, monitor: configuration.monitor,
            unmeasuredConnectTime: attemptDelay ?? .milliseconds(250), reports: configuration.failureReports,
            transport: transport)
        self.proxies = ProxyEnvironment(configuration.proxyEnvironment ?? ProcessInfo.processInfo.environment)
    }

    deinit {
        racedPast.cancelAll()
    }

    /// Sends `request` and collects the whole response, following redirects (re-resolving each host).
    ///
    /// - Throws: `URLError` with the codes apps already handle (`cannotFindHost`,
    ///   `cannotConnectToHost`, `timedOut`, `serverCertificateUntrusted`, `cancelled`, …).
    public func data(for request: URLRequest) async throws -> (Data, HTTPURLResponse) {
        // The whole body is kept anyway: collected as it arrives, without the reader's bounded
        // buffer and stream that `bytes(for:)` needs (a step per chunk, measured in bench row 5).
        let whole = try await send(request)
        return (whole.body, whole.response)
    }

    /// Sends `request` and returns when the response head arrives; the body follows chunk by chunk.
    /// Redirects are followed. Releasing the stream before its end (leaving the loop with nothing
    /// else holding it), or cancelling the task, cancels the transfer; a stream kept after the loop
    /// keeps the transfer going, paused at the bound below.
    ///
    /// At most 4 MiB of the body waits unread: while a slow reader lags that far behind, the
    /// transfer is paused (over HTTP/2, libcurl may keep up to one stream window more, 32 MiB).
    public func bytes(for request: URLRequest) async throws -> (HTTPURLResponse, AsyncThrowingStream<Data, any Error>) {
        let collector = StreamingCollector()
        var options = RequestOptions()
        options.cookies = ownCookies
        options.receiveBuffer = collector.buffer
        let task = start(request, followRedirects: true, options: options, delegate: collector)
        return try await withTaskCancellationHandler {
            try await collector.response(task: task)
        } onCancel: {
            task.cancel()
        }
    }

    /// Starts `request`; events go to `delegate`, which gets exactly one ``HTTPDNSClientDelegate/didComplete(error:)``.
    ///
    /// - Parameters:
    ///   - request: the request; its host is resolved through the engine when protected.
    ///   - followRedirects: follow 3xx answers here (true), or hand them to the delegate (false), as
    ///     the URL protocol does so that `URLSession` decides.
    ///   - delegate: receives the response, the body as it arrives, and the end.
    @discardableResult
    public func start(_ request: URLRequest, followRedirects: Bool, delegate: any HTTPDNSClientDelegate) -> HTTPDNSClientTask {
        start(request, followRedirects: followRedirects, cookies: ownCookies, delegate: delegate)
    }

    /// The cookies of the client's own requests: sent from and stored in the configured storage.
    var ownCookies: CookieHandling {
        configuration.cookieStorage.map { .sendAndStore($0) } ?? .none
    }

    /// Who sends and stores cookies: the URL protocol stores only, since `URLSession` already added
    /// the `Cookie` header from its storage before handing the request over.
    package enum CookieHandling: Sendable {
        case none
        case storeOnly(HTTPCookieStorage)
        case sendAndStore(HTTPCookieStorage)
    }

    func start(
        _ request: URLRequest, followRedirects: Bool, cookies: CookieHandling, delegate: any HTTPDNSClientDelegate
    ) -> HTTPDNSClientTask {
        var options = RequestOptions()
        options.cookies = cookies
        return start(request, followRedirects: followRedirects, options: options, delegate: delegate)
    }

    package func start(
        _ request: URLRequest, followRedirects: Bool, options: RequestOptions, delegate: any HTTPDNSClientDelegate
    ) -> HTTPDNSClientTask {
        let task = HTTPDNSClientTask()
        let driver = Task {
            await self.run(request, followRedirects: followRedirects, options: options, delegate: delegate, task: task)
        }
        task.setDriver(driver)
        return task
    }

    func run(
        _ request: URLRequest, followRedirects: Bool, options: RequestOptions, delegate: any HTTPDNSClientDelegate,
        task: HTTPDNSClientTask
    ) async {
        var request = request
        var options = options
        var body = options.body ?? RequestBody(request, newStream: options.newBodyStream)
        var hops = 0
        while true {
            do {
                let outcome = try await exchange(
                    request, body: body, interceptRedirects: followRedirects, options: options, delegate: delegate, task: task)
                guard case .redirect(var next, let answer) = outcome else { return }
                if let decide = options.redirect {
                    guard let chosen = await decide(answer.response, next) else {
                        // Not followed: the redirect itself is the answer, body included.
                        task.finish()
                        delegate.didReceive(response: answer.response, connection: answer.connection)
                        if !answer.body.isEmpty { delegate.didReceive(data: answer.body) }
                        delegate.didComplete(error: nil)
                        return
                    }
                    next = chosen
                }
                // URLSession added the first request's cookies; later hops get theirs from the storage.
                if case .storeOnly(let storage) = options.cookies { options.cookies = .sendAndStore(storage) }
                hops += 1
                guard hops <= configuration.maximumRedirects else {
                    throw URLError(.httpTooManyRedirects, userInfo: [NSLocalizedDescriptionKey: "The server redirected more than \(configuration.maximumRedirects) times."])
                }
                body = try await body.following(to: next)
                request = next
            } catch {
                task.finish()
                delegate.didComplete(error: HTTPDNSClient.urlError(error, url: request.url))
                return
            }
        }
    }
}

/// Receives the events of one request started with ``HTTPDNSClient/start(_:followRedirects:delegate:)``.
///
/// Calls come in order from the transport's thread or the client's task; return quickly.
public protocol HTTPDNSClientDelegate: Sendable {
    /// The response head, for the original URL, and how the connection was made.
    func didReceive(response: HTTPURLResponse, connection: HTTPDNSConnectionReport)
    /// A piece of the body.
    func didReceive(data: Data)
    /// The end: nil on success, otherwise a `URLError`. Called exactly once.
    func didComplete(error: (any Error)?)
}

/// How a request reached its server, for `-v` output and diagnostics.
public struct HTTPDNSConnectionReport: Sendable {
    /// The URL's host: the name sent in `Host`, in TLS SNI, and verified in the certificate.
    public var host: String
    /// The answer the addresses came from (nil when the host is not protected or is an IP literal).
    public var answer: HTTPDNSAnswer?
    /// One connection attempt.
    public struct Attempt: Sendable, Hashable {
        /// The address tried; nil when the host was not pinned (not protected).
        public var address: HTTPDNSIPAddress?
        /// Why it failed; nil for the attempt that succeeded.
        public var failure: String?

        package init(address: HTTPDNSIPAddress?, failure: String?) {
            self.address = address
            self.failure = failure
        }
    }

    /// Every address tried, in order (the last one succeeded).
    public var attempts: [Attempt]
    /// The address connected to.
    public var connectedAddress: HTTPDNSIPAddress?
    /// True when the URL is HTTPS: the certificate was verified for ``host`` (verification cannot be disabled).
    public var certificateVerified: Bool
    /// True when the address came from the domain-block redirect endpoint.
    public var viaBlockRedirect: Bool
    /// `"1.1"` or `"2"`.
    public var httpVersion: String
    /// The response's header fields in the order received, repeats kept (`HTTPURLResponse` merges
    /// them); for `curl -i`-style output.
    package var responseHeaders: [HTTPTransportHeader] = []
    /// Whether a proxy was configured for the URL, and whether the request used it.
    public var proxy: ProxyUse = .none
    /// Where the time went.
    public var timings = Timings()

    package init(
        host: String, answer: HTTPDNSAnswer?, attempts: [Attempt], connectedAddress: HTTPDNSIPAddress?,
        certificateVerified: Bool, viaBlockRedirect: Bool, httpVersion: String
    ) {
        self.host = host
        self.answer = answer
        self.attempts = attempts
        self.connectedAddress = connectedAddress
        self.certificateVerified = certificateVerified
        self.viaBlockRedirect = viaBlockRedirect
        self.httpVersion = httpVersion
    }
}

/// A running request; cancel it with ``cancel()``.
public final class HTTPDNSClientTask: Sendable {
    private struct State {
        var driver: Task<Void, Never>?
        var transfer: HTTPTransportTask?
        var cancelled = false
        var finished = false
    }

    private let state = HTTPDNSLock(State())

    /// Stops the request at once; the delegate gets `URLError(.cancelled)` unless it already completed.
    public func cancel() {
        let (driver, transfer) = state.withLock { state -> (Task<Void, Never>?, HTTPTransportTask?) in
            state.cancelled = true
            return (state.driver, state.transfer)
        }
        driver?.cancel()
        transfer?.cancel()
    }

    var isCancelled: Bool { state.withLock { $0.cancelled } }

    func setDriver(_ driver: Task<Void, Never>) {
        let cancelled = state.withLock { state -> Bool in
            state.driver = driver
            return state.cancelled
        }
        if cancelled { driver.cancel() }
    }

    /// Records the current transfer; returns false (and cancels it) when the task was cancelled meanwhile.
    func setTransfer(_ transfer: HTTPTransportTask?) -> Bool {
        let cancelled = state.withLock { state -> Bool in
            state.transfer = transfer
            return state.cancelled
        }
        if cancelled { transfer?.cancel() }
        return !cancelled
    }

    func finish() {
        state.withLock { $0.finished = true }
    }
}
