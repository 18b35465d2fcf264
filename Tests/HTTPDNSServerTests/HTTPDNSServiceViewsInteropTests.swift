import DNSWire
import Foundation
import HTTPDNSCore
@testable import HTTPDNSServer
import HTTPDNSTestSupport
import HTTPServing
import XCTest

/// Views over real sockets: a PROXY v2 header from a trusted balancer, the view in `/metrics` and
/// the access log, and `dig +subnet` / `kdig +subnet` over HTTPS seeing the view's answer and scope.
final class HTTPDNSServiceViewsInteropTests: HTTPDNSServiceInteropTestsBase {
    /// carrier-a: 10.1.0.0/16 with 10.1.2.0/24 (inner) inside; solo: 172.16.0.0/12.
    private func configureViews(_ configuration: inout HTTPDNSService.Configuration) {
        var carrier = HTTPDNSViews.View(name: "carrier-a")
        carrier.networks = ["10.1.0.0/16"]
        var inner = HTTPDNSViews.View(name: "inner")
        inner.networks = ["10.1.2.0/24"]
        var solo = HTTPDNSViews.View(name: "solo")
        solo.networks = ["172.16.0.0/12", "::ffff:192.168.0.0/112"]
        configuration.views = try! HTTPDNSViews([carrier, inner, solo])
        configuration.zone = try! HTTPDNSZone(json: Data("""
            {"www.example.test": {"A": ["192.0.2.1"], "ttl": 60,
               "views": {"carrier-a": {"A": ["198.51.100.1"]}, "inner": {"A": ["198.51.100.2"]}, "solo": {"A": ["198.51.100.3"]}}}}
            """.utf8))
    }

    private func v2Header(source: [UInt8]) -> [UInt8] {
        let block = source + [127, 0, 0, 1, 0x13, 0x88, 0x1f, 0x90]
        return PROXYProtocolHeader.v2Signature + [0x21, 0x11, 0, UInt8(block.count)] + block
    }

    func testAPROXYv2ClientFromATrustedBalancerGetsItsViewNamedInMetricsAndTheAccessLog() throws {
        let logPath = NSTemporaryDirectory() + "views-access-\(UUID().uuidString).jsonl"
        defer { try? FileManager.default.removeItem(atPath: logPath) }
        let metrics = HTTPDNSServerMetrics()
        let log = try HTTPDNSAccessLog(path: logPath, metrics: metrics)
        let service = try startService { configuration in
            self.configureViews(&configuration)
            configuration.trustedProxies = try! HTTPDNSTrustedProxies(["127.0.0.1/32"])
            configuration.metrics = metrics
            configuration.accessLog = log
        }
        let port = try XCTUnwrap(service.port)
        let proxied = try RawHTTPClient(port: port)
        XCTAssertTrue(proxied.send(bytes: v2Header(source: [10, 1, 2, 3]) + Array("GET /d?dn=www.example.test&clientip=1 HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n".utf8)))
        let answer = proxied.readResponse(timeout: 5)
        XCTAssertEqual(answer.status, 200)
        XCTAssertEqual(answer.body, "198.51.100.2|10.1.2.3")
        // From a peer that is not trusted the header is not read as PROXY at all: a bad request.
        let other = try startService { configuration in
            self.configureViews(&configuration)
            configuration.trustedProxies = try! HTTPDNSTrustedProxies(["192.0.2.0/24"])
        }
        let untrusted = try RawHTTPClient(port: try XCTUnwrap(other.port))
        untrusted.send(bytes: v2Header(source: [10, 1, 2, 3]) + Array("GET /d?dn=www.example.test HTTP/1.1\r\nHost: t\r\n\r\n".utf8))
        let refused = untrusted.readResponse(timeout: 5)
        XCTAssertNotEqual(refused.body, "198.51.100.2")
        // X-Forwarded-For from the untrusted peer is ignored too: the peer's own (default) view.
        let spoofed = try RawHTTPClient(port: try XCTUnwrap(other.port))
        spoofed.send("GET /d?dn=www.example.test HTTP/1.1\r\nHost: t\r\nX-Forwarded-For: 10.1.2.3\r\nConnection: close\r\n\r\n")
        XCTAssertEqual(spoofed.readResponse(timeout: 5).body, "192.0.2.1")

        let plain = try RawHTTPClient(port: port)
        plain.send("GET /metrics HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
        let text = plain.readResponse(timeout: 5).body
        XCTAssertTrue(text.contains("httpdns_view_queries_total{view=\"inner\"} 1\n"), text)
        XCTAssertTrue(text.contains("httpdns_view_queries_total{view=\"carrier-a\"} 0\n"), text)
        XCTAssertTrue(text.contains("httpdns_view_queries_total{view=\"default\"} 0\n"), text)
        service.stop()
        XCTAssertTrue(log.close())
        let lines = try String(contentsOfFile: logPath, encoding: .utf8).split(separator: "\n")
        XCTAssertTrue(lines.first?.contains(#""client":"10.1.2.3""#) ?? false, "\(lines)")
        XCTAssertTrue(lines.first?.hasSuffix(#""view":"inner"}"#) ?? false, "\(lines)")
    }

    func testDigAndKdigWithSubnetOverHTTPSSeeTheViewAndItsScope() throws {
        let (service, certificates) = try startHTTPSService { self.configureViews(&$0) }
        defer { certificates.remove() }
        let port = try XCTUnwrap(service.port)
        let dig = [
            "@127.0.0.1", "-p", "\(port)", "+tries=1", "+timeout=5", "+tls-ca=\(certificates.caCertificatePath)",
            "+tls-hostname=localhost",
        ]
        let kdig = [
            "@127.0.0.1", "-p", "\(port)", "+tls-ca=\(certificates.caCertificatePath)", "+tls-hostname=localhost",
            "+timeout=5", "+retry=0",
        ]
        // (subnet, the view's address, the scope the answer must carry)
        let cases: [(String, String, Int)] = [
            ("10.1.9.0/24", "198.51.100.1", 21),     // leaves 10.1.2.0/24's path at bit 20
            ("10.1.2.0/24", "198.51.100.2", 24),     // nothing inside the inner /24: scope = its prefix
            ("172.20.0.0/16", "198.51.100.3", 12),   // nothing inside: scope = the matched /12
            ("192.168.1.0/24", "198.51.100.3", 16),  // an IPv4-mapped network in the view's file matches IPv4
            ("203.0.113.0/24", "192.0.2.1", 5),      // the default view: leaves 192.168.0.0's path at bit 4
        ]
        for (subnet, address, scope) in cases {
            for method in ["+https", "+https-get"] {
                let answer = try run("/usr/bin/dig", [method] + dig + ["+subnet=\(subnet)", "www.example.test", "A"])
                XCTAssertEqual(answer.status, 0, answer.output + answer.errors)
                XCTAssertTrue(answer.output.range(of: #"www\.example\.test\.\s+60\s+IN\s+A\s+"# + NSRegularExpression.escapedPattern(for: address), options: .regularExpression) != nil,
                              "dig \(subnet): \(answer.output)")
                XCTAssertTrue(answer.output.contains("CLIENT-SUBNET: \(subnet)/\(scope)"), "dig \(subnet): \(answer.output)")
            }
            let answer = try run("/usr/bin/kdig", ["+https"] + kdig + ["+subnet=\(subnet)", "www.example.test", "A"])
            XCTAssertEqual(answer.status, 0, answer.output + answer.errors)
            XCTAssertTrue(answer.output.contains(address), "kdig \(subnet): \(answer.output)")
            XCTAssertTrue(answer.output.contains("CLIENT-SUBNET: \(subnet)/\(scope)"), "kdig \(subnet): \(answer.output)")
        }
    }
}
