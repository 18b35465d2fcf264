import Foundation
import HTTPDNS
import HTTPDNSCore
import HTTPDNSServer
import HTTPDNSTestSupport
import HTTPDNSNetworking
import HTTPDNSURLSession
import XCTest
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The loopback addresses of the test bed. Every test starts its own servers on free ports, so
/// the same addresses serve every test; other suites use 127.0.0.1–127.0.0.13.
enum Bed {
    /// The true origin: nginx with the real virtual hosts.
    static let origin = HTTPDNSIPAddress("127.0.0.20")!
    /// Where the lying DNS sends protected names: an "ad page" server.
    static let hijack = HTTPDNSIPAddress("127.0.0.21")!
    /// An address that once served a host and now serves another site (stale cache test).
    static let reassigned = HTTPDNSIPAddress("127.0.0.22")!
    /// A second origin address (a redirect target on another IP; a second good address).
    static let second = HTTPDNSIPAddress("127.0.0.24")!
    /// Addresses with nothing listening: connections are refused.
    static let dead = HTTPDNSIPAddress("127.0.0.25")!
    static let dead2 = HTTPDNSIPAddress("127.0.0.26")!
    /// The lying dnsmasq (LocalDNS).
    static let dns = HTTPDNSIPAddress("127.0.0.30")!
    /// HTTPDNS services and backends.
    static let services = HTTPDNSIPAddress("127.0.0.1")!

    /// A private CA made now; remove it with `remove()`.
    static func certificates() throws -> TestCertificates {
        try TestCertificates(commonName: "swift-httpdns acceptance CA")
    }

    /// An HTTPDNS service (the project's own server) on loopback, answering `zone` truthfully.
    static func httpdnsService(_ zone: [String: [HTTPDNSIPAddress]], ttl: Int = 300) throws -> HTTPDNSService {
        let entries = zone.mapValues { HTTPDNSZone.Entry(ipv4: $0, ttl: ttl) }
        var configuration = HTTPDNSService.Configuration(zone: try HTTPDNSZone(entries: entries))
        configuration.address = services
        let service = HTTPDNSService(configuration: configuration)
        try service.start()
        return service
    }

    /// The DNSPod provider spec for `service`: the engine speaks the real DNSPod protocol to it.
    static func dnspod(_ service: HTTPDNSService) -> String {
        "dnspod=http://\(services):\(service.port ?? 0)"
    }

    /// A dnsmasq on ``dns`` that answers `lies` (name → address, subdomains included) and `truths`.
    static func lyingDNS(_ lies: [String: HTTPDNSIPAddress], truths: [String: HTTPDNSIPAddress] = [:]) throws -> Dnsmasq {
        var configuration = Dnsmasq.Configuration()
        configuration.listenAddress = dns
        for (name, address) in lies.sorted(by: { $0.key < $1.key }) { configuration.lie(name, to: address) }
        configuration.hostRecords = truths.sorted { $0.key < $1.key }.map { (name: $0.key, addresses: [$0.value]) }
        return try withDefaultSignalMask { try Dnsmasq(configuration) }
    }

    /// Runs `body` with no signal blocked on this thread.
    ///
    /// Async tests run on libdispatch worker threads, which block almost every signal, and a child
    /// spawned by Foundation's `Process` inherits that mask. dnsmasq never resets it, so it would
    /// ignore the SIGTERM of `Dnsmasq.stop()` and the stop would wait forever.
    static func withDefaultSignalMask<T>(_ body: () throws -> T) rethrows -> T {
        var empty = sigset_t()
        var saved = sigset_t()
        sigemptyset(&empty)
        pthread_sigmask(SIG_SETMASK, &empty, &saved)
        defer { pthread_sigmask(SIG_SETMASK, &saved, nil) }
        return try body()
    }

    /// An engine protecting `*.test` with the given provider specs and the dnsmasq as LocalDNS.
    static func engine(
        providers: [String], localDNS: Dnsmasq?, trusting certificates: TestCertificates,
        configure: (inout HTTPDNSConfiguration) -> Void = { _ in }
    ) throws -> HTTPDNSEngine {
        var configuration = HTTPDNSConfiguration(resolvers: try providers.map { try HTTPDNSProviderSpec(parsing: $0).makeResolver() })
        configuration.hygiene = .init(allowPrivate: true)
        configuration.protectedHosts = HTTPDNSHostPolicy(["*.test"])
        configuration.trust = .caFile(certificates.caCertificatePath)
        if let localDNS {
            configuration.localDNS = .server(localDNS.address, port: localDNS.port)
        } else {
            configuration.localDNS = .custom(HTTPDNSStaticResolver([:], name: "no-localdns"))
        }
        configure(&configuration)
        return HTTPDNSEngine(configuration: configuration)
    }

    /// A client of `engine` (which trusts only the test CA).
    static func client(
        _ engine: HTTPDNSEngine, configure: (inout HTTPDNSClient.Configuration) -> Void = { _ in }
    ) -> HTTPDNSClient {
        var configuration = HTTPDNSClient.Configuration()
        configuration.connectTimeout = .seconds(3)
        configure(&configuration)
        return HTTPDNSClient(engine: engine, configuration: configuration)
    }

    /// A `URLSession` with the protocol installed for `client` (the one line apps add).
    static func session(_ client: HTTPDNSClient) throws -> URLSession {
        URLSession(configuration: try .httpdnsProtected(client: client))
    }

    /// A `(name, value)` header for nginx locations.
    static func header(_ name: String, _ value: String) -> (name: String, value: String) {
        (name, value)
    }

    /// Waits (polling, at most `seconds`) until `condition` holds; returns whether it did.
    static func eventually(within seconds: Double = 10, _ condition: () -> Bool) async -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if condition() { return true }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return condition()
    }
}

/// Collects the events of one ``HTTPDNSClient/start(_:followRedirects:delegate:)`` request, so a
/// test can see the connection report and cancel mid-body.
///
/// An `NSLock` rather than `Mutex`: ThreadSanitizer on Linux does not see `Mutex`'s futex waits.
final class RecordingDelegate: HTTPDNSClientDelegate, @unchecked Sendable {
    private struct State {
        var response: HTTPURLResponse?
        var report: HTTPDNSConnectionReport?
        var body = Data()
        var received = 0
        var completion: Result<Void, URLError>?
        var waiters: [(condition: @Sendable (State) -> Bool, continuation: CheckedContinuation<Void, Never>)] = []
    }

    private let lock = NSLock()
    private var storage = State()
    /// Keep at most this many body bytes (the rest is only counted).
    private let keep: Int

    init(keep: Int = 1 << 20) {
        self.keep = keep
    }

    var response: HTTPURLResponse? { lock.withLock { storage.response } }
    var report: HTTPDNSConnectionReport? { lock.withLock { storage.report } }
    var body: Data { lock.withLock { storage.body } }
    var received: Int { lock.withLock { storage.received } }
    var completion: Result<Void, URLError>? { lock.withLock { storage.completion } }

    func didReceive(response: HTTPURLResponse, connection: HTTPDNSConnectionReport) {
        update { $0.response = response; $0.report = connection }
    }

    func didReceive(data: Data) {
        update { state in
            state.received += data.count
            if state.body.count < keep { state.body.append(data.prefix(keep - state.body.count)) }
        }
    }

    func didComplete(error: (any Error)?) {
        update { state in
            if let error {
                state.completion = .failure(error as? URLError ?? URLError(.unknown))
            } else {
                state.completion = .success(())
            }
        }
    }

    /// Returns once the request completed.
    func completed() async -> Result<Void, URLError> {
        await wait { $0.completion != nil }
        return completion!
    }

    /// Returns once `count` body bytes arrived or the request completed.
    func received(atLeast count: Int) async {
        await wait { $0.received >= count || $0.completion != nil }
    }

    private func wait(_ condition: @escaping @Sendable (State) -> Bool) async {
        await withCheckedContinuation { continuation in
            let now = lock.withLock { () -> Bool in
                if condition(storage) { return true }
                storage.waiters.append((condition, continuation))
                return false
            }
            if now { continuation.resume() }
        }
    }

    private func update(_ change: (inout State) -> Void) {
        let ready = lock.withLock { () -> [CheckedContinuation<Void, Never>] in
            change(&storage)
            let snapshot = storage
            let ready = storage.waiters.filter { $0.condition(snapshot) }.map(\.continuation)
            storage.waiters.removeAll { $0.condition(snapshot) }
            return ready
        }
        ready.forEach { $0.resume() }
    }
}
