import Foundation
import HTTPDNSDifferential
import HTTPDNSNetworking
import HTTPDNSTestSupport
import XCTest

/// (b): plain `URLSession` through ``HTTPDNSProxy`` under the lying LocalDNS — the runner's child
/// process gets `https_proxy`/`http_proxy` (credential included) and changes nothing else, exactly as
/// an app protected by `HTTPDNSProxy.startForProcess` or `httpdns proxy` would. URLSession keeps
/// all of HTTP; the one difference is corelibs' own (``ProxyExpectations/connectAnswer``), and the
/// one open defect libcurl's (``ProxyExpectations/checkRound(_:_:plain:)``).
struct ProxyTestRoute: DifferentialTestRoute {
    let name = "(b) proxy"
    let runnerRoute = "plain"
    let environment: [String: String]

    /// Without the CONNECT answer (exactly once where a data delegate sees it, nowhere else),
    /// equal to plain `URLSession`; `concurrent-200`'s rounds within their bound instead.
    func problems(_ scenario: String, observed: DifferentialResult, plain: DifferentialResult, known: DifferentialKnownValues) -> [String] {
        var observed = observed
        var problems: [String] = []
        let dropped = ProxyExpectations.droppingConnectAnswers(&observed)
        let expected = ProxyExpectations.connectAnswerSeen.contains(scenario) ? 1 : 0
        if dropped != expected {
            problems.append("\(dropped) CONNECT answers (\"\(ProxyExpectations.connectAnswer)\") reached a delegate, not \(expected)")
        }
        if scenario == "concurrent-200" {
            for round in ["cold", "warm"] {
                problems += ProxyExpectations.checkRound(round, observed, plain: plain)
                for fact in ["ok", "bodies", "failed", "failures"] { observed.facts["\(round).\(fact)"] = plain.facts["\(round).\(fact)"] }
            }
        }
        return problems + Self.unequal(observed, plain)
    }

    func rows(_ scenario: String) -> [String] {
        ProxyExpectations.connectAnswerSeen.contains(scenario) ? ["the CONNECT answer as a delegate response"] : []
    }

    init(proxyURL: String) {
        environment = [
            "https_proxy": proxyURL, "http_proxy": proxyURL, "HTTPS_PROXY": proxyURL,
            "no_proxy": "", "NO_PROXY": "", "all_proxy": "", "ALL_PROXY": "",
        ]
    }

    /// The proxy on 127.0.0.1 for `bed`: HTTPDNS is the bed's service, LocalDNS its lying dnsmasq,
    /// loopback targets allowed (the origin is nginx on 127.0.0.1).
    static func startProxy(bed: DifferentialBed, monitor: ProxyRouteMonitor) throws -> HTTPDNSProxy {
        var engine = HTTPDNSConfiguration(resolvers: [try HTTPDNSProviderSpec(parsing: bed.providerSpec).makeResolver()])
        engine.hygiene = .init(allowPrivate: true)
        engine.protectedHosts = HTTPDNSHostPolicy(["*.localhost"])
        engine.localDNS = .server(HTTPDNSIPAddress(bed.localDNSAddress)!, port: UInt16(bed.localDNSPort))
        engine.monitor = monitor
        var configuration = HTTPDNSProxy.Configuration()
        configuration.allowPrivateTargets = true
        configuration.maxConnections = 1024
        configuration.monitor = monitor
        let proxy = HTTPDNSProxy(engine: HTTPDNSEngine(configuration: engine), configuration: configuration)
        try proxy.start()
        return proxy
    }
}

/// Proof that route (b) really went through the proxy and HTTPDNS.
final class ProxyRouteMonitor: HTTPDNSEventMonitor, HTTPDNSProxyMonitor, @unchecked Sendable {
    private let lock = NSLock()
    private var counts: [String: Int] = [:]

    subscript(key: String) -> Int { lock.withLock { counts[key, default: 0] } }

    private func add(_ key: String) { lock.withLock { counts[key, default: 0] += 1 } }

    func proxyTunnelOpened(host: String, port: UInt16, address: HTTPDNSIPAddress, attempts: Int) { add("tunnels") }
    func proxyTunnelFailed(host: String, port: UInt16, status: Int, reason: String) { add("failed \(status): \(reason)") }
    func proxyRefused(status: Int, reason: String) { add("refused \(status): \(reason)") }
    func connectionFailed(address: HTTPDNSIPAddress, error: any Error) { add("connect failed: \(error)") }

    /// Every failure and refusal the proxy reported, with counts (for the failure message).
    var failures: [String: Int] { lock.withLock { counts.filter { !["tunnels", "httpdnsAnswers", "localDNSAnswers"].contains($0.key) } } }
    func lookupAnswered(_ answer: HTTPDNSAnswer) { add(answer.origin == .localDNS ? "localDNSAnswers" : "httpdnsAnswers") }
}

extension DifferentialTests {
    func testTheProxyRouteBehavesAsPlainURLSession() throws {
        let launcher = try DifferentialBedLauncher()
        defer { launcher.stop() }
        let monitor = ProxyRouteMonitor()
        let proxy = try ProxyTestRoute.startProxy(bed: launcher.bed, monitor: monitor)
        defer { proxy.stop() }
        try compare(ProxyTestRoute(proxyURL: try XCTUnwrap(proxy.url?.absoluteString)), launcher: launcher)
        XCTAssertGreaterThan(monitor["tunnels"], 0, "no request went through the proxy")
        XCTAssertEqual(monitor.failures, [:], "the proxy refused or failed")
        XCTAssertGreaterThan(monitor["httpdnsAnswers"], 0, "the proxy never asked HTTPDNS")
        XCTAssertEqual(monitor["localDNSAnswers"], 0, "an answer came from the lying LocalDNS")
    }
}
