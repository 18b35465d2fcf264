import Foundation
import HTTPDNS
import HTTPDNSCore
import HTTPDNSDirect

/// An HTTP/1.1 proxy on loopback that resolves through HTTPDNS: protection for code you do not own.
///
/// Programs that honour `https_proxy` (curl, Python, git, browsers, and `URLSession` on Linux, whose
/// libcurl reads the environment) send `CONNECT www.example.com:443` *without resolving the name*;
/// the proxy resolves it through the engine (protected hosts over HTTPDNS, the rest through the
/// configured LocalDNS), connects with the same failover as ``HTTPDNSClient`` (cool-down, next
/// address, LocalDNS addresses, then the domain-block redirect endpoint) and then only moves bytes.
/// TLS stays end to end: SNI and certificate verification are the program's own, on the real name.
/// Absolute-form requests for plain `http://` URLs are forwarded one per client connection
/// (`Connection: close` both ways).
///
/// Safe by default: a random credential is required (`Proxy-Authorization: Basic`, sent by libcurl
/// from `http://user:token@127.0.0.1:port`; every local user can reach loopback), loopback and
/// private targets are refused, the proxy never connects to itself, connections are bounded and a
/// client that stalls before its request is complete is cut off.
///
/// A thread per core (at most four) runs an epoll loop over non-blocking sockets; each client
/// connection stays on the loop that accepted it. A fresh cached answer is used on the loop at once;
/// other resolutions and the failover run as tasks that hand each connect back to the loop. Short
/// tunnels copy through one buffer per loop; past 64 KiB a direction moves with `splice(2)` through
/// a pipe (no copies through user space).
///
/// ```
/// let proxy = HTTPDNSProxy(engine: engine)
/// try proxy.start()
/// print(proxy.url!)  // http://httpdns:3f…@127.0.0.1:40123
/// ```
public final class HTTPDNSProxy: Sendable {
    /// Settings of one proxy.
    public struct Configuration: Sendable {
        /// Addresses to listen on (IPv4 and IPv6 loopback, or others at your own risk). Default `127.0.0.1`.
        public var listenAddresses: [HTTPDNSIPAddress] = [HTTPDNSIPAddress("127.0.0.1")!]
        /// The port, the same on every address; 0 picks a free one. Default 0.
        public var port: UInt16 = 0
        /// The credential clients must send; nil lets any local process use the proxy.
        /// Default: a new random one (``Credential/random()``).
        public var credential: Credential? = .random()
        /// Allow tunnels to loopback, private and reserved space (127/8, ::1, 10/8, 192.168/16,
        /// fc00::/7, …), as `HTTPDNSAnswerHygiene.allowPrivate` does for answers: for intranets and
        /// test beds. The proxy's own address stays refused. Default false.
        public var allowPrivateTargets: Bool = false
        /// Time limit of one connection attempt to one address. Default 5 s.
        public var connectTimeout: Duration = .seconds(5)
        /// A client must send its whole request head within this time after connecting. Default 10 s.
        public var headTimeout: Duration = .seconds(10)
        /// A tunnel or forwarded request with no byte moving for this long is closed. Default 300 s.
        public var idleTimeout: Duration = .seconds(300)
        /// Most client connections at once; more are answered 503 and closed. Default 256.
        public var maxConnections: Int = 256
        /// Where to ask for an address when a host cannot be found or connected (the domain-block
        /// redirect), as ``HTTPDNSClient/Configuration/blockRedirect``. Default nil: none.
        public var blockRedirect: (any HTTPDNSResolver)? = nil
        /// Told of tunnels opened, failed and closed, clients refused, each address that failed
        /// to connect, and failure reports dropped. Default nil: nobody.
        public var monitor: (any HTTPDNSProxyMonitor)? = nil
        /// Where to report the addresses of protected hosts that failed to connect, as
        /// ``HTTPDNSClient/Configuration/failureReports`` (the proxy sees refusals, timeouts and
        /// unreachable addresses; TLS is the program's own). Default nil: no reports.
        public var failureReports: HTTPDNSFailureReports? = nil

        public init() {}
    }

    /// A user name and password for `Proxy-Authorization: Basic` (RFC 7617).
    public struct Credential: Sendable, Hashable {
        /// The user name; no `:`.
        public var user: String
        public var password: String

        /// - Parameters:
        ///   - user: the user name, without `:`.
        ///   - password: the password (any text without control characters).
        public init(user: String, password: String) {
            self.user = user
            self.password = password
        }

        /// User `httpdns` and 32 random hexadecimal digits (128 bits).
        public static func random() -> Credential {
            var generator = SystemRandomNumberGenerator()
            let token = (0..<4).map { _ in
                let word = String(generator.next() as UInt32, radix: 16)
                return String(repeating: "0", count: 8 - word.count) + word
            }.joined()
            return Credential(user: "httpdns", password: token)
        }
    }

    /// The engine that resolves every target.
    public let engine: HTTPDNSEngine
    /// The settings this proxy was made with.
    public let configuration: Configuration
    /// The failover (the one ``HTTPDNSClient`` uses): cool-down, next address, LocalDNS, block redirect.
    let failover: HTTPDNSConnector

    /// The sender of ``Configuration/failureReports``, nil when they are off.
    package var failureReporter: FailureReporter? { failover.reporter }

    private struct State {
        var loops: [ProxyLoop] = []
        var endpoints: [(address: HTTPDNSIPAddress, port: UInt16)] = []
    }

    private let state = HTTPDNSLock(State())

    /// A proxy that is not listening yet (see ``start()``).
    ///
    /// - Parameters:
    ///   - engine: resolves every target.
    ///   - configuration: settings. Default: 127.0.0.1, a free port, a random credential.
    public init(engine: HTTPDNSEngine, configuration: Configuration = .init()) {
        self.engine = engine
        self.configuration = configuration
        // The proxy connects one address at a time (no racing): an unmeasured address sorts as
        // the client's default attempt delay would place it.
        self.failover = HTTPDNSConnector(
            engine: engine, blockRedirect: configuration.blockRedirect, monitor: configuration.monitor,
            unmeasuredConnectTime: .milliseconds(250), reports: configuration.failureReports)
    }

    deinit {
        for loop in state.withLock({ $0.loops }) { loop.stop() }
    }

    /// Binds every listen address and starts the loop threads.
    ///
    /// - Throws: ``HTTPDNSProxyError`` `.cannotListen` (address in use, no such address) or
    ///   `.invalidConfiguration` (no address, a credential with `:` in the user name, …).
    public func start() throws(HTTPDNSProxyError) {
        try validate()
        var listeners: [(fd: Int32, address: HTTPDNSIPAddress, port: UInt16)] = []
        var port = configuration.port
        do {
            for address in configuration.listenAddresses {
                let (fd, bound) = try ProxySocket.listen(address, port: port, backlog: 1024)
                listeners.append((fd, address, bound))
                port = bound
            }
        } catch {
            for listener in listeners { close(listener.fd) }
            throw error
        }
        let endpoints = listeners.map { (address: $0.address, port: $0.port) }
        let settings = ProxySettings(
            configuration: configuration,
            policy: ProxyTargetPolicy(allowPrivate: configuration.allowPrivateTargets, listeners: endpoints),
            connector: ProxyConnector(failover: failover))
        let count = ProxyLoop.defaultCount
        let shared = ProxyListeners(fds: listeners.map(\.fd), loops: count)
        var loops: [ProxyLoop] = []
        do {
            for _ in 0..<count { loops.append(try ProxyLoop(settings: settings, listeners: shared)) }
        } catch {
            // The loops made so far give the listeners up; the ones never made do it here.
            for loop in loops { loop.discard() }
            for _ in loops.count..<count { shared.release() }
            throw error
        }
        let started = state.withLock { state -> Bool in
            guard state.loops.isEmpty else { return false }
            state.loops = loops
            state.endpoints = endpoints
            return true
        }
        guard started else {
            for loop in loops { loop.discard() }
            throw HTTPDNSProxyError(.invalidConfiguration, "the proxy is already running")
        }
        for (index, loop) in loops.enumerated() { loop.start(name: "httpdns-proxy-\(index)") }
    }

    /// Stops listening and closes every connection (on the loop threads, right after this returns).
    public func stop() {
        for loop in takeLoops() { loop.stop() }
    }

    /// Stops listening at once and drains: new connects are refused (clients already in the listen
    /// queue are still served), a connection with nothing in flight closes at once, and the others
    /// close as soon as their exchange is over — a forwarded request once its whole response went
    /// out, a tunnel once no byte has moved either way for a second (the proxy cannot see the
    /// messages inside) — or are cut when `timeout` has passed. Returns once every connection has
    /// closed. Does nothing when the proxy is not running.
    ///
    /// - Parameter timeout: how long connections may finish what they have in flight.
    /// - Returns: how many connections were cut at `timeout` with something still in flight.
    @discardableResult
    public func stop(drain timeout: Duration) async -> Int {
        let loops = takeLoops()
        guard !loops.isEmpty else { return 0 }
        let nanoseconds = ProxySettings.nanoseconds(timeout)
        return await withCheckedContinuation { (continuation: CheckedContinuation<Int, Never>) in
            let tally = HTTPDNSLock((left: loops.count, cut: 0))
            for loop in loops {
                loop.drain(within: nanoseconds) { cut in
                    let total = tally.withLock { tally -> Int? in
                        tally.left -= 1
                        tally.cut += cut
                        return tally.left == 0 ? tally.cut : nil
                    }
                    if let total { continuation.resume(returning: total) }
                }
            }
        }
    }

    /// The running loops, taken out of the state: whoever takes them stops them.
    private func takeLoops() -> [ProxyLoop] {
        state.withLock { state -> [ProxyLoop] in
            defer { state.loops = [] }
            return state.loops
        }
    }

    /// The bound port, once started.
    public var port: UInt16? {
        state.withLock { $0.endpoints.first?.port }
    }

    /// The proxy URL for clients, credential included (`http://httpdns:TOKEN@127.0.0.1:PORT`), on
    /// the first listen address; nil before ``start()``.
    public var url: URL? {
        guard let endpoint = state.withLock({ $0.endpoints.first }) else { return nil }
        return URL(string: HTTPDNSProxy.urlText(address: endpoint.address, port: endpoint.port, credential: configuration.credential))
    }

    /// `http://USER:PASS@ADDRESS:PORT`, user and password percent-encoded.
    static func urlText(address: HTTPDNSIPAddress, port: UInt16, credential: Credential?) -> String {
        var text = "http://"
        if let credential {
            let allowed = CharacterSet.alphanumerics.union(CharacterSet(charactersIn: "-._~"))
            let user = credential.user.addingPercentEncoding(withAllowedCharacters: allowed) ?? credential.user
            let password = credential.password.addingPercentEncoding(withAllowedCharacters: allowed) ?? credential.password
            text += "\(user):\(password)@"
        }
        return text + "\(address.uriText):\(port)"
    }

    private func validate() throws(HTTPDNSProxyError) {
        guard !configuration.listenAddresses.isEmpty else {
            throw HTTPDNSProxyError(.invalidConfiguration, "no listen address")
        }
        guard configuration.maxConnections > 0 else {
            throw HTTPDNSProxyError(.invalidConfiguration, "maxConnections must be at least 1")
        }
        if let credential = configuration.credential {
            let bad = credential.user.isEmpty || credential.user.contains(":")
                || (credential.user + credential.password).unicodeScalars.contains { $0.value < 0x20 || $0.value == 0x7F }
            guard !bad else {
                throw HTTPDNSProxyError(.invalidConfiguration, "a credential needs a user name without ':' and no control characters")
            }
        }
    }
}

/// Why a proxy could not start.
///
/// The codes, their sentences and the description form are the ones the HTTPDNS service's error
/// uses too (`HTTPDNSStartFailure`).
public struct HTTPDNSProxyError: Error, Sendable, CustomStringConvertible {
    /// A stable error code.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        package let base: HTTPDNSStartFailure
        private init(_ base: HTTPDNSStartFailure) { self.base = base }

        /// An address could not be bound (in use, not on this machine, no permission).
        public static let cannotListen = Code(.cannotListen)
        /// The configuration cannot work.
        public static let invalidConfiguration = Code(.invalidConfiguration)

        public var description: String { base.rawValue }

        /// Every code, for tests that must cover each one.
        package static let allCases: [Code] = [.cannotListen, .invalidConfiguration]
    }

    /// The stable code.
    public var code: Code
    /// A short explanation.
    public var detail: String

    package init(_ code: Code, _ detail: String) {
        self.code = code
        self.detail = detail
    }

    public var description: String { code.base.description(detail: detail) }
}

extension HTTPDNSProxyError: LocalizedError {
    /// A short sentence for people (what `localizedDescription` shows): no code, no detail; the
    /// detail is in ``description``.
    public var errorDescription: String? { code.base.sentence(server: "The proxy") }
}
