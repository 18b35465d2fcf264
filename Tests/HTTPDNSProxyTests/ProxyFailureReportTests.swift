import Foundation
import HTTPDNS
import HTTPDNSCore
import HTTPDNSProxyTestBed
import HTTPDNSTestSupport
import HTTPDNSNetworking
@testable import HTTPDNSLoopbackProxy
@testable import HTTPDNSDirect
import XCTest

/// The loopback proxy reports the addresses its failover found dead, as the client does (one
/// connector for both): curl through the proxy to a host whose first address refuses.
///
/// Synchronous, as ``ProxyTests``: curl and the waits block, which must stay off the cooperative pool.
final class ProxyFailureReportTests: XCTestCase {
    func testATunnelsRefusedAddressIsReportedWithoutThePath() throws {
        let bed = try ProxyTestBed()
        defer { bed.stop() }
        let endpoint = try ReportEndpoint()
        defer { endpoint.stop() }
        var engineConfiguration = HTTPDNSConfiguration(resolvers: [try HTTPDNSProviderSpec(parsing: bed.providerSpec).makeResolver()])
        engineConfiguration.localDNS = .server(bed.dnsmasq.address, port: bed.dnsmasq.port)
        engineConfiguration.hygiene = .init(allowPrivate: true)
        engineConfiguration.protectedHosts = HTTPDNSHostPolicy(["*.proxied.test"])
        var configuration = HTTPDNSProxy.Configuration()
        configuration.allowPrivateTargets = true
        configuration.connectTimeout = .seconds(3)
        var reports = HTTPDNSFailureReports(endpoint: endpoint.url(), credential: .token("proxy-token"))
        reports.interval = .milliseconds(200)
        configuration.failureReports = reports
        let proxy = HTTPDNSProxy(engine: HTTPDNSEngine(configuration: engineConfiguration), configuration: configuration)
        try proxy.start()
        defer { proxy.stop() }

        let url = "https://\(ProxyTestBed.failoverHost):\(bed.httpsPort)/private/thing?token=abc123"
        let result = try Curl.run(["--proxy", proxy.url!.absoluteString, "--cacert", bed.certificates.caCertificatePath, url])
        XCTAssertEqual(result.status, 0, result.stderrText)

        let deadline = Date().addingTimeInterval(10)
        while endpoint.reports.isEmpty, Date() < deadline { usleep(20_000) }
        let items = endpoint.reports
        XCTAssertEqual(items.count, 1)
        let item = try XCTUnwrap(items.first)
        XCTAssertEqual(item["host"] as? String, ProxyTestBed.failoverHost)
        XCTAssertEqual(item["address"] as? String, ProxyTestBed.dead.description)
        XCTAssertEqual(item["port"] as? Int, Int(bed.httpsPort))
        XCTAssertEqual(item["error"] as? String, "connect-refused")
        let received = try XCTUnwrap(endpoint.received.first)
        XCTAssertEqual(received.header("Authorization"), "Bearer proxy-token")
        let text = String(decoding: received.request.body, as: UTF8.self)
        XCTAssertFalse(text.contains("private") || text.contains("abc123"), text)
        let accepted = Date().addingTimeInterval(10)
        while proxy.failureReporter?.acceptedCount != 1, Date() < accepted { usleep(20_000) }
        XCTAssertEqual(proxy.failureReporter?.acceptedCount, 1)
    }
}
