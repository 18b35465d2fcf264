import Foundation
import HTTPDNSServer
import HTTPDNSTestSupport
import XCTest

/// `httpdns serve`: starts, answers (asked with the curl command), stops on SIGTERM.
final class ServeCommandTests: ToolTestCase {
    func testServeAnswersAndStopsOnSIGTERM() throws {
        let directory = try temporaryDirectory()
        let zone = directory.appendingPathComponent("zone.json")
        try Data(#"{"www.example.test": {"A": ["192.0.2.10"], "ttl": 60}}"#.utf8).write(to: zone)
        let (upstream, gate) = try heldUpstream()
        defer {
            gate.open()
            upstream.stop()
        }
        let server = try runner.start([
            "serve", "--listen", "127.0.0.1:0", "--zone", zone.path, "--upstream", "dnspod=\(upstream.baseURL.absoluteString)",
            "--allow-private", "--drain-timeout", "25",
        ])
        let line = try server.waitForLine(startingWith: "listening on ")
        let base = String(line.dropFirst("listening on ".count))
        XCTAssertTrue(base.hasPrefix("http://127.0.0.1:"), line)

        let curl = try curlGet("\(base)/d?dn=www.example.test&ttl=1")
        XCTAssertEqual(curl.status, 0, curl.stderr)
        XCTAssertEqual(curl.stdout, "192.0.2.10,60")

        let resolved = try run(["resolve", "--json", "--provider", "dnspod=\(base)", "--httpdns-only", "www.example.test"])
        XCTAssertEqual(resolved.status, 0, resolved.stderrText)
        XCTAssertEqual(try jsonObject(resolved.stdoutText)["addresses"] as? [String], ["192.0.2.10"])

        // A request held at the upstream keeps the process draining after SIGTERM, so the refusal
        // below is seen while serve is alive (after its exit nothing could answer anyway).
        let held = try RunningTool(
            executable: URL(fileURLWithPath: "/usr/bin/curl"),
            arguments: ["-sS", "--max-time", "30", "--noproxy", "*", "\(base)/d?dn=held.example.test"])
        XCTAssertTrue(pollUntilBlocking { gate.waitingCount >= 1 }, "the held request never reached the upstream")
        server.send(SIGTERM)
        var after = (status: Int32(0), stdout: "", stderr: "")
        XCTAssertTrue(
            try pollUntilBlocking {
                after = try curlGet("\(base)/d?dn=www.example.test")
                return after.status != 0
            }, "still answering after SIGTERM: \(after.stdout)")
        XCTAssertEqual(after.status, 7, "curl's 'could not connect' (the listener is closed): \(after.stderr)")
        XCTAssertTrue(server.isRunning, "the refusal must be seen during the drain, not after the exit")
        gate.open()
        XCTAssertEqual(try held.wait(timeout: .seconds(30)), 0, String(decoding: held.stderr, as: UTF8.self))
        XCTAssertEqual(String(decoding: held.stdout, as: UTF8.self), "93.184.216.34", "the held request is answered in the drain")
        assertStopsCleanly(server, signalled: true)
    }

    func testEnterpriseKeysAndSecrets() throws {
        let directory = try temporaryDirectory()
        let zone = directory.appendingPathComponent("zone.json")
        try Data(#"{"secret.example.test": {"A": ["192.0.2.20"], "ttl": 60}}"#.utf8).write(to: zone)
        let server = try runner.start([
            "serve", "--listen", "127.0.0.1:0", "--zone", zone.path,
            "--dnspod-key", "42=0123456789abcdef", "--alibaba-secret", "100000=IAmASecret",
        ])
        defer { assertStopsCleanly(server) }
        let line = try server.waitForLine(startingWith: "listening on ")
        let base = String(line.dropFirst("listening on ".count))

        for alg in ["aes", "des"] {
            let dnspod = "dnspod=\(base)?id=42&key=0123456789abcdef&alg=\(alg)"
            let result = try run(["resolve", "--provider", dnspod, "--httpdns-only", "--json", "secret.example.test"])
            XCTAssertEqual(result.status, 0, alg + ": " + result.stderrText)
            XCTAssertEqual(try jsonObject(result.stdoutText)["addresses"] as? [String], ["192.0.2.20"], alg)
        }
        let wrongKey = try run([
            "resolve", "--provider", "dnspod=\(base)?id=42&key=fedcba9876543210&alg=aes", "--httpdns-only", "secret.example.test",
        ])
        XCTAssertEqual(wrongKey.status, 1, "a wrong key must not decrypt")

        let signed = try run([
            "resolve", "--provider", "alibaba=\(base)/100000?secret=IAmASecret", "--httpdns-only", "--json", "secret.example.test",
        ])
        XCTAssertEqual(signed.status, 0, signed.stderrText)
        let badSignature = try run([
            "resolve", "--provider", "alibaba=\(base)/100000?secret=wrong", "--httpdns-only", "secret.example.test",
        ])
        XCTAssertEqual(badSignature.status, 1)
        XCTAssertTrue(badSignature.stderrText.contains("unauthorized"), badSignature.stderrText)

        assertUsage(try run(["serve", "--dnspod-key", "nokey"]))
    }

    func testBadZoneFails() throws {
        let directory = try temporaryDirectory()
        let zone = directory.appendingPathComponent("zone.json")
        try Data(#"{"www.example.test": {"A": ["not an address"]}}"#.utf8).write(to: zone)
        assertFailure(try run(["serve", "--listen", "127.0.0.1:0", "--zone", zone.path]))
    }

    /// Runs `/usr/bin/curl -sS URL` (loopback only).
    private func curlGet(_ url: String) throws -> (status: Int32, stdout: String, stderr: String) {
        let curl = try RunningTool(
            executable: URL(fileURLWithPath: "/usr/bin/curl"), arguments: ["-sS", "--max-time", "10", "--noproxy", "*", url])
        let status = try curl.wait(timeout: .seconds(30))
        return (status, String(decoding: curl.stdout, as: UTF8.self), String(decoding: curl.stderr, as: UTF8.self))
    }
}
