import Foundation
import HTTPDNS
import HTTPDNSServer
import HTTPDNSTestSupport
import HTTPServing
import XCTest

/// One policy: on the same network, `engine.checkHijack` (what an app calls) and `httpdns check`
/// (what an operator runs) reach the same verdict and the same conclusion, with and without a probe.
final class CheckAgreementTests: ToolTestCase {
    let zone = #"{"www.example.test": {"A": ["127.0.0.1"], "ttl": 60}}"#

    private struct Network {
        var localPort: UInt16
        var providerURL: String
        var probePort: Int?
        var caPath: String?
    }

    /// The conclusion of both routes: (verdict, hijack, reason) from the command's JSON and from the
    /// engine.
    private func bothConclusions(_ network: Network) async throws -> (command: [String], library: [String]) {
        var arguments = ["check", "--json", "--local-dns", "udp=127.0.0.1:\(network.localPort)",
                         "--provider", "dnspod=\(network.providerURL)", "--allow-private", "--httpdns-only"]
        if let port = network.probePort { arguments += ["--probe-port", "\(port)"] }
        if let ca = network.caPath { arguments += ["--cacert", ca] }
        let result = try run(arguments + ["www.example.test"])
        let object = try jsonObject(result.stdoutText)
        let command = [
            object["verdict"] as? String ?? "-", (object["hijack"] as? Bool).map { "\($0)" } ?? "-", object["reason"] as? String ?? "-",
        ]

        // The same settings as the flags above, through the public API.
        var configuration = HTTPDNSConfiguration(resolvers: [try HTTPDNSProviderSpec(parsing: "dnspod=\(network.providerURL)").makeResolver()])
        configuration.localDNS = .server(HTTPDNSIPAddress("127.0.0.1")!, port: network.localPort)
        configuration.hygiene = HTTPDNSAnswerHygiene(allowPrivate: true)
        configuration.failover.httpdnsOnly = true
        if let ca = network.caPath { configuration.trust = .caFile(ca) }
        let engine = HTTPDNSEngine(configuration: configuration)
        let report = await engine.checkHijack("www.example.test", check: HTTPDNSHijackCheck(probePort: network.probePort))
        return (command, [report.verdict.rawValue, "\(report.isHijack)", report.reason?.rawValue ?? "-"])
    }

    func testLyingResolverIsHijackForBoth() async throws {
        let liar = try dnsmasq { $0.lie("www.example.test", to: HTTPDNSIPAddress("127.0.0.66")!) }
        let both = try await bothConclusions(Network(localPort: liar.port, providerURL: try startService(zone: zone)))
        XCTAssertEqual(both.library, ["disagree", "true", "privateAnswersAllowed"])
        XCTAssertEqual(both.command, both.library)
    }

    func testHonestResolverIsCleanForBoth() async throws {
        let honest = try dnsmasq { $0.hostRecords = [("www.example.test", [HTTPDNSIPAddress("127.0.0.1")!])] }
        let both = try await bothConclusions(Network(localPort: honest.port, providerURL: try startService(zone: zone)))
        XCTAssertEqual(both.library, ["agree", "false", "-"])
        XCTAssertEqual(both.command, both.library)
    }

    func testBlockingResolverIsHijackForBoth() async throws {
        let blocker = try dnsmasq { $0.localDomains = ["example.test"] }
        let both = try await bothConclusions(Network(localPort: blocker.port, providerURL: try startService(zone: zone)))
        XCTAssertEqual(both.library, ["localMissing", "true", "localMissing"])
        XCTAssertEqual(both.command, both.library)
    }

    func testProbeClearsAValidEdgeForBoth() async throws {
        let certificates = try TestCertificates()
        addCleanup { certificates.remove() }
        let leaf = try certificates.issue(dnsNames: ["www.example.test"])
        func server(_ address: String, port: Int) throws -> HTTPServer {
            var configuration = HTTPServer.Configuration(address: HTTPDNSIPAddress(address)!, port: port)
            configuration.tlsCertificatePEM = leaf.certificatePEM
            configuration.tlsKeyPEM = leaf.keyPEM
            let server = try HTTPServer(configuration: configuration) { _ in .text("ok") }
            addCleanup { server.stop() }
            return server
        }
        let origin = try server("127.0.0.1", port: 0)
        _ = try server("127.0.0.67", port: origin.port)
        let steering = try dnsmasq { $0.lie("www.example.test", to: HTTPDNSIPAddress("127.0.0.67")!) }
        let both = try await bothConclusions(Network(
            localPort: steering.port, providerURL: try startService(zone: zone), probePort: origin.port,
            caPath: certificates.caCertificatePath))
        XCTAssertEqual(both.library, ["disagree", "false", "-"])
        XCTAssertEqual(both.command, both.library)
    }
}
