import Foundation
import HTTPDNS
import HTTPDNSCore
import HTTPDNSTransport
import HTTPDNSNetworking
import HTTPDNSURLSession
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// How a scenario's sessions are made inside the runner: the only thing that differs between routes.
///
/// A route that needs process-wide state (the proxy route's `https_proxy`) gets it from the
/// environment the test gives the runner's child process, and uses ``PlainRoute`` here.
public protocol DifferentialRoute: Sendable {
    /// The name on the runner's command line (`--route NAME`).
    var name: String { get }
    /// A fresh configuration for one session of a scenario; two calls give independent sessions
    /// (own cookie storage, own installation).
    func makeConfiguration() -> URLSessionConfiguration
    /// Route evidence after the scenario (not compared between routes).
    func proof() -> [String: Int]
}

/// (a) and (b): `URLSession` exactly as an app has it.
public struct PlainRoute: DifferentialRoute {
    public let name = "plain"
    public init() {}
    public func makeConfiguration() -> URLSessionConfiguration { .ephemeral }
    public func proof() -> [String: Int] { [:] }
}

/// (c): the same configuration with ``HTTPDNSURLProtocol`` installed; HTTPDNS knows the truth,
/// LocalDNS (dnsmasq) lies.
public final class URLProtocolRoute: DifferentialRoute {
    public let name = "protocol"
    private let bed: DifferentialBed
    private let monitor = LookupCounter()

    public init(bed: DifferentialBed) {
        self.bed = bed
    }

    public func makeConfiguration() -> URLSessionConfiguration {
        let configuration = URLSessionConfiguration.ephemeral
        do {
            try configuration.httpdnsInstall(makeClient())
        } catch {
            // The runner is a test's child process: a toolchain the route refuses fails it loudly.
            preconditionFailure("the URL protocol refused to install: \(error)")
        }
        return configuration
    }

    /// A client of its own per session: installations must not mix.
    private func makeClient() -> HTTPDNSClient {
        var engine = HTTPDNSConfiguration(resolvers: [try! HTTPDNSProviderSpec(parsing: bed.providerSpec).makeResolver()])
        engine.hygiene = .init(allowPrivate: true)
        engine.protectedHosts = HTTPDNSHostPolicy(["*.localhost"])
        engine.localDNS = .server(HTTPDNSIPAddress(bed.localDNSAddress)!, port: UInt16(bed.localDNSPort))
        engine.monitor = monitor
        engine.trust = .caFile(bed.caPath)
        var client = HTTPDNSClient.Configuration()
        client.connectTimeout = .seconds(3)
        return HTTPDNSClient(engine: HTTPDNSEngine(configuration: engine), configuration: client)
    }

    public func proof() -> [String: Int] {
        monitor.counts()
    }
}

/// Counts the engine's answers: proof that the protected route resolved through HTTPDNS and never
/// fell back to the lying LocalDNS.
final class LookupCounter: HTTPDNSEventMonitor {
    private let state = HTTPDNSLock([String: Int]())

    func counts() -> [String: Int] { state.withLock { $0 } }

    private func add(_ key: String) { state.withLock { $0[key, default: 0] += 1 } }

    func lookupAnswered(_ answer: HTTPDNSAnswer) { add(answer.origin == .localDNS ? "localDNSAnswers" : "httpdnsAnswers") }
    func cacheHit(host: String, family: HTTPDNSAddressFamily) { add("cacheHits") }
    func fellBackToLocalDNS(host: String) { add("localDNSFallbacks") }
}
