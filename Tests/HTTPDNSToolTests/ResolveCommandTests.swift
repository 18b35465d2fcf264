import Foundation
import HTTPDNSTestSupport
import XCTest

/// `httpdns resolve` against a loopback HTTPDNS service speaking DNSPod text.
final class ResolveCommandTests: ToolTestCase {
    let zone = """
        {"www.example.test": {"A": ["127.0.0.10", "127.0.0.11"], "AAAA": ["::1"], "ttl": 120},
         "v6.example.test": {"AAAA": ["::1"], "ttl": 60}}
        """

    func testHumanLineShowsAddressesTTLAndSource() throws {
        let provider = try dnspod(zone: zone)
        let result = try run(["resolve"] + provider + ["www.example.test"])
        XCTAssertEqual(result.status, 0, result.stderrText)
        XCTAssertEqual(result.stdoutLines.count, 1, result.stdoutText)
        let line = try XCTUnwrap(result.stdoutLines.first)
        XCTAssertTrue(line.hasPrefix("www.example.test  127.0.0.10, 127.0.0.11  ttl="), line)
        XCTAssertTrue(line.contains("origin=httpdns"), line)
        XCTAssertTrue(line.contains("source=dnspod http://127.0.0.1:"), line)
        XCTAssertTrue(result.stderr.isEmpty, result.stderrText)
    }

    func testJSONLinesInArgumentOrder() throws {
        let provider = try dnspod(zone: zone)
        let result = try run(["resolve", "--json"] + provider + ["www.example.test", "192.0.2.7"])
        XCTAssertEqual(result.status, 0, result.stderrText)
        XCTAssertEqual(result.stdoutLines.count, 2, result.stdoutText)
        let first = try jsonObject(result.stdoutLines[0])
        XCTAssertEqual(first["host"] as? String, "www.example.test")
        XCTAssertEqual(first["addresses"] as? [String], ["127.0.0.10", "127.0.0.11"])
        XCTAssertNotNil(first["ttl"] as? Int)
        XCTAssertEqual((first["source"] as? String)?.hasPrefix("dnspod http://127.0.0.1:"), true)
        XCTAssertEqual(first["origin"] as? String, "httpdns")
        XCTAssertEqual(first["stale"] as? Bool, false)
        let literal = try jsonObject(result.stdoutLines[1])
        XCTAssertEqual(literal["host"] as? String, "192.0.2.7")
        XCTAssertEqual(literal["addresses"] as? [String], ["192.0.2.7"])
        XCTAssertEqual(literal["origin"] as? String, "static")
    }

    func testTypeSelectsTheFamily() throws {
        let provider = try dnspod(zone: zone)
        let v6 = try run(["resolve", "--json", "--type", "AAAA"] + provider + ["v6.example.test"])
        XCTAssertEqual(v6.status, 0, v6.stderrText)
        XCTAssertEqual(try jsonObject(v6.stdoutText)["addresses"] as? [String], ["::1"])

        let both = try run(["resolve", "--json", "--type", "BOTH"] + provider + ["www.example.test"])
        XCTAssertEqual(both.status, 0, both.stderrText)
        XCTAssertEqual(try jsonObject(both.stdoutText)["addresses"] as? [String], ["127.0.0.10", "127.0.0.11", "::1"])
    }

    func testStaticEntryComesFirst() throws {
        let provider = try dnspod(zone: zone)
        let result = try run(["resolve", "--json", "--resolve", "www.example.test:443:192.0.2.44"] + provider + ["www.example.test"])
        XCTAssertEqual(result.status, 0, result.stderrText)
        let object = try jsonObject(result.stdoutText)
        XCTAssertEqual(object["addresses"] as? [String], ["192.0.2.44"])
        XCTAssertEqual(object["origin"] as? String, "static")
    }

    func testPrivateAnswersAreDroppedWithoutAllowPrivate() throws {
        let base = try startService(zone: zone)
        let result = try run(["resolve", "--provider", "dnspod=\(base)", "--httpdns-only", "www.example.test"])
        assertFailure(result)
        XCTAssertTrue(result.stderrText.contains("www.example.test"), result.stderrText)
        XCTAssertTrue(result.stderrText.contains("bogon"), result.stderrText)
    }

    func testUnreachableProviderFailsWithOneLine() throws {
        let port = try closedPort()
        let result = try run(["resolve", "--provider", "dnspod=http://127.0.0.1:\(port)", "--httpdns-only", "www.example.test"])
        assertFailure(result)
        XCTAssertTrue(result.stdout.isEmpty, result.stdoutText)
    }

    func testOneFailingHostFailsTheCommandButPrintsTheOthers() throws {
        let provider = try dnspod(zone: zone)
        let result = try run(["resolve"] + provider + ["www.example.test", "missing.example.test"])
        XCTAssertEqual(result.status, 1, result.stderrText)
        XCTAssertEqual(result.stdoutLines.count, 1, result.stdoutText)
        XCTAssertEqual(result.stderrLines.count, 1, result.stderrText)
        XCTAssertTrue(result.stderrText.contains("missing.example.test"), result.stderrText)
    }

    func testConfigFileSuppliesProvidersAndFlagsOverrideIt() throws {
        let base = try startService(zone: zone)
        let directory = try temporaryDirectory()
        let config = directory.appendingPathComponent("httpdns.json")
        try Data(#"{"providers": ["dnspod=\#(base)"], "allowPrivate": true, "httpdnsOnly": true, "type": "AAAA"}"#.utf8)
            .write(to: config)
        let fromFile = try run(["resolve", "--json", "--config", config.path, "www.example.test"])
        XCTAssertEqual(fromFile.status, 0, fromFile.stderrText)
        XCTAssertEqual(try jsonObject(fromFile.stdoutText)["addresses"] as? [String], ["::1"])

        let overridden = try run(["resolve", "--json", "--config", config.path, "--type", "A", "www.example.test"])
        XCTAssertEqual(overridden.status, 0, overridden.stderrText)
        XCTAssertEqual(try jsonObject(overridden.stdoutText)["addresses"] as? [String], ["127.0.0.10", "127.0.0.11"])
    }

    func testConfigFileWithUnknownKeyIsAUsageError() throws {
        let directory = try temporaryDirectory()
        let config = directory.appendingPathComponent("bad.json")
        try Data(#"{"provider": ["dnspod=http://127.0.0.1:1"]}"#.utf8).write(to: config)
        let result = try run(["resolve", "--config", config.path, "www.example.test"])
        assertUsage(result)
        XCTAssertTrue(result.stderrText.contains("unknown key \"provider\""), result.stderrText)

        try Data(#"{"httpdnsOnly": 1}"#.utf8).write(to: config)
        assertUsage(try run(["resolve", "--config", config.path, "www.example.test"]))
        try Data("not json".utf8).write(to: config)
        assertUsage(try run(["resolve", "--config", config.path, "www.example.test"]))
    }
}
