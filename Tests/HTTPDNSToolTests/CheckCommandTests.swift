import Foundation
import HTTPDNSCore
import HTTPDNSTestSupport
import XCTest

/// `httpdns check` with a real dnsmasq as LocalDNS: lying (hijack, exit 2) and honest (agree, exit 0).
final class CheckCommandTests: ToolTestCase {
    let zone = #"{"www.example.test": {"A": ["127.0.0.1"], "ttl": 60}}"#

    private func dnsmasq(_ configure: (inout Dnsmasq.Configuration) -> Void) throws -> Dnsmasq {
        var configuration = Dnsmasq.Configuration()
        configure(&configuration)
        let server = try Dnsmasq(configuration)
        addCleanup { server.stop() }
        return server
    }

    func testLyingLocalDNSIsReportedAsHijackWithExitTwo() throws {
        let liar = try dnsmasq { $0.lie("www.example.test", to: IPAddress("127.0.0.66")!) }
        let provider = try dnspod(zone: zone)
        let result = try run(["check", "--local-dns", "udp=127.0.0.1:\(liar.port)"] + provider + ["www.example.test"])
        XCTAssertEqual(result.status, 2, "stdout: \(result.stdoutText) stderr: \(result.stderrText)")
        XCTAssertTrue(result.stdoutText.contains("127.0.0.66"), result.stdoutText)
        XCTAssertTrue(result.stdoutText.contains("127.0.0.1"), result.stdoutText)
        XCTAssertTrue(result.stdoutText.contains("verdict: disagree"), result.stdoutText)
        XCTAssertTrue(result.stdoutText.contains("HIJACKED"), result.stdoutText)
    }

    func testJSONReportCarriesBothSidesAndTheConclusion() throws {
        let liar = try dnsmasq { $0.lie("www.example.test", to: IPAddress("127.0.0.66")!) }
        let provider = try dnspod(zone: zone)
        let result = try run(["check", "--json", "--local-dns", "udp=127.0.0.1:\(liar.port)"] + provider + ["www.example.test"])
        XCTAssertEqual(result.status, 2, result.stderrText)
        let object = try jsonObject(result.stdoutText)
        XCTAssertEqual(object["host"] as? String, "www.example.test")
        XCTAssertEqual(object["verdict"] as? String, "disagree")
        XCTAssertEqual(object["hijack"] as? Bool, true)
        let local = try XCTUnwrap(object["local"] as? [String: Any])
        XCTAssertEqual(local["addresses"] as? [String], ["127.0.0.66"])
        let httpdns = try XCTUnwrap(object["httpdns"] as? [String: Any])
        XCTAssertEqual(httpdns["addresses"] as? [String], ["127.0.0.1"])
    }

    func testAgreementExitsZero() throws {
        let honest = try dnsmasq { $0.hostRecords = [("www.example.test", [IPAddress("127.0.0.1")!])] }
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
        let honest = try dnsmasq { $0.hostRecords = [("www.example.test", [IPAddress("127.0.0.1")!])] }
        let port = try closedPort()
        let result = try run([
            "check", "--local-dns", "udp=127.0.0.1:\(honest.port)", "--provider", "dnspod=http://127.0.0.1:\(port)",
            "--allow-private", "www.example.test",
        ])
        XCTAssertEqual(result.status, 1, result.stderrText)
        XCTAssertTrue(result.stdoutText.contains("inconclusive"), result.stdoutText)
        XCTAssertEqual(result.stderrLines.count, 1, result.stderrText)
    }
}
