import Foundation
import HTTPDNSCore
import HTTPDNSServer
import HTTPDNSTestSupport
import HTTPServing
import XCTest

/// `httpdns check` with a real dnsmasq as LocalDNS: lying (hijack, exit 2) and honest (agree, exit 0).
final class CheckCommandTests: ToolTestCase {
    let zone = #"{"www.example.test": {"A": ["127.0.0.1"], "ttl": 60}}"#

    func testLyingLocalDNSIsReportedAsHijackWithExitTwo() throws {
        let liar = try dnsmasq { $0.lie("www.example.test", to: HTTPDNSIPAddress("127.0.0.66")!) }
        let provider = try dnspod(zone: zone)
        let result = try run(["check", "--local-dns", "udp=127.0.0.1:\(liar.port)"] + provider + ["www.example.test"])
        XCTAssertEqual(result.status, 2, "stdout: \(result.stdoutText) stderr: \(result.stderrText)")
        XCTAssertTrue(result.stdoutText.contains("127.0.0.66"), result.stdoutText)
        XCTAssertTrue(result.stdoutText.contains("127.0.0.1"), result.stdoutText)
        XCTAssertTrue(result.stdoutText.contains("verdict: disagree"), result.stdoutText)
        XCTAssertTrue(result.stdoutText.contains("HIJACKED"), result.stdoutText)
        XCTAssertTrue(result.stdoutText.contains("because private answers are allowed"), result.stdoutText)
        XCTAssertFalse(result.stdoutText.contains("strict"), result.stdoutText)
    }

    /// --strict is said when asked, and is the reason given.
    func testStrictIsTheReasonWhenAsked() throws {
        let liar = try dnsmasq { $0.lie("www.example.test", to: HTTPDNSIPAddress("127.0.0.66")!) }
        let provider = try dnspod(zone: zone)
        let arguments = ["check", "--strict", "--local-dns", "udp=127.0.0.1:\(liar.port)"] + provider
        let text = try run(arguments + ["www.example.test"])
        XCTAssertEqual(text.status, 2, text.stdoutText + text.stderrText)
        XCTAssertTrue(text.stdoutText.contains("counted as hijacking because the check is strict"), text.stdoutText)
        let json = try run(arguments + ["--json", "www.example.test"])
        XCTAssertEqual(json.status, 2, json.stdoutText + json.stderrText)
        let object = try jsonObject(json.stdoutText)
        XCTAssertEqual(object["strict"] as? Bool, true)
        XCTAssertEqual(object["reason"] as? String, "strictDisagreement")
        XCTAssertEqual(object["hijack"] as? Bool, true)
    }

    func testJSONReportCarriesBothSidesAndTheConclusion() throws {
        let liar = try dnsmasq { $0.lie("www.example.test", to: HTTPDNSIPAddress("127.0.0.66")!) }
        let provider = try dnspod(zone: zone)
        let result = try run(["check", "--json", "--local-dns", "udp=127.0.0.1:\(liar.port)"] + provider + ["www.example.test"])
        XCTAssertEqual(result.status, 2, result.stderrText)
        let object = try jsonObject(result.stdoutText)
        XCTAssertEqual(object["host"] as? String, "www.example.test")
        XCTAssertEqual(object["verdict"] as? String, "disagree")
        XCTAssertEqual(object["hijack"] as? Bool, true)
        // Why: --allow-private, not strictness (nobody asked for --strict).
        XCTAssertEqual(object["reason"] as? String, "privateAnswersAllowed")
        XCTAssertEqual(object["strict"] as? Bool, false)
        let local = try XCTUnwrap(object["local"] as? [String: Any])
        XCTAssertEqual(local["addresses"] as? [String], ["127.0.0.66"])
        let httpdns = try XCTUnwrap(object["httpdns"] as? [String: Any])
        XCTAssertEqual(httpdns["addresses"] as? [String], ["127.0.0.1"])
    }

    func testAgreementExitsZero() throws {
        let honest = try dnsmasq { $0.hostRecords = [("www.example.test", [HTTPDNSIPAddress("127.0.0.1")!])] }
        let provider = try dnspod(zone: zone)
        let result = try run(["check", "--local-dns", "udp=127.0.0.1:\(honest.port)"] + provider + ["www.example.test"])
        XCTAssertEqual(result.status, 0, "stdout: \(result.stdoutText) stderr: \(result.stderrText)")
        XCTAssertTrue(result.stdoutText.contains("verdict: agree"), result.stdoutText)
        XCTAssertTrue(result.stdoutText.contains("OK"), result.stdoutText)
    }

    func testBlockedNameIsAHijack() throws {
        let blocker = try dnsmasq { $0.localDomains = ["example.test"] }
        let provider = try dnspod(zone: zone)
        let result = try run(["check", "--json", "--local-dns", "udp=127.0.0.1:\(blocker.port)"] + provider + ["www.example.test"])
        XCTAssertEqual(result.status, 2, result.stderrText)
        XCTAssertEqual(try jsonObject(result.stdoutText)["verdict"] as? String, "localMissing")
    }

    func testNoHTTPDNSAnswerIsInconclusiveAndFails() throws {
        let honest = try dnsmasq { $0.hostRecords = [("www.example.test", [HTTPDNSIPAddress("127.0.0.1")!])] }
        let port = try closedPort()
        let result = try run([
            "check", "--local-dns", "udp=127.0.0.1:\(honest.port)", "--provider", "dnspod=http://127.0.0.1:\(port)",
            "--allow-private", "www.example.test",
        ])
        XCTAssertEqual(result.status, 1, result.stderrText)
        XCTAssertTrue(result.stdoutText.contains("inconclusive"), result.stdoutText)
        XCTAssertEqual(result.stderrLines.count, 1, result.stderrText)
    }

    // MARK: - Confirming by connecting (--probe-port)

    /// An HTTPS origin for www.example.test on 127.0.0.1 and another server on `other` at the same
    /// port, presenting `otherNames`' certificate.
    private func tlsPair(other: String, otherNames: [String]) throws -> (port: Int, ca: String) {
        let certificates = try TestCertificates()
        addCleanup { certificates.remove() }
        let real = try certificates.issue(dnsNames: ["www.example.test"])
        let impostor = try certificates.issue(dnsNames: otherNames)
        func server(_ address: String, port: Int, _ leaf: TestCertificates.Leaf) throws -> HTTPServer {
            var configuration = HTTPServer.Configuration(address: HTTPDNSIPAddress(address)!, port: port)
            configuration.tlsCertificatePEM = leaf.certificatePEM
            configuration.tlsKeyPEM = leaf.keyPEM
            let server = try HTTPServer(configuration: configuration) { _ in .text("ok") }
            addCleanup { server.stop() }
            return server
        }
        let origin = try server("127.0.0.1", port: 0, real)
        _ = try server(other, port: origin.port, impostor)
        return (origin.port, certificates.caCertificatePath)
    }

    func testProbeConfirmsAHijackByTheCertificate() throws {
        let (port, ca) = try tlsPair(other: "127.0.0.66", otherNames: ["ads.example.test"])
        let liar = try dnsmasq { $0.lie("www.example.test", to: HTTPDNSIPAddress("127.0.0.66")!) }
        let provider = try dnspod(zone: zone)
        let result = try run(
            ["check", "--probe-port", "\(port)", "--cacert", ca, "--local-dns", "udp=127.0.0.1:\(liar.port)"] + provider
                + ["www.example.test"])
        XCTAssertEqual(result.status, 2, result.stdoutText + result.stderrText)
        XCTAssertTrue(result.stdoutText.contains("probe LocalDNS 127.0.0.66:\(port): certificate did NOT verify"), result.stdoutText)
        XCTAssertTrue(result.stdoutText.contains("probe HTTPDNS  127.0.0.1:\(port): certificate verified"), result.stdoutText)
        XCTAssertTrue(result.stdoutText.contains("confirmed by connecting"), result.stdoutText)
    }

    func testProbeClearsAnotherValidEdge() throws {
        // LocalDNS points elsewhere, but that address proves it is www.example.test: a CDN edge.
        let (port, ca) = try tlsPair(other: "127.0.0.67", otherNames: ["www.example.test"])
        let steering = try dnsmasq { $0.lie("www.example.test", to: HTTPDNSIPAddress("127.0.0.67")!) }
        let provider = try dnspod(zone: zone)
        let result = try run(
            ["check", "--json", "--probe-port", "\(port)", "--cacert", ca, "--local-dns", "udp=127.0.0.1:\(steering.port)"]
                + provider + ["www.example.test"])
        XCTAssertEqual(result.status, 0, result.stdoutText + result.stderrText)
        let object = try jsonObject(result.stdoutText)
        XCTAssertEqual(object["verdict"] as? String, "disagree")
        XCTAssertEqual(object["hijack"] as? Bool, false)
        let probe = try XCTUnwrap(object["probe"] as? [String: Any])
        XCTAssertEqual((probe["local"] as? [String: Any])?["result"] as? String, "verified")
    }
}
