#if canImport(Glibc)
import Glibc
#endif
import Foundation
import HTTPDNSTestSupport
import XCTest

/// Issue 32: `--config FILE` takes what the flags can say. The "serve" and "stub" objects are read
/// against the same option rows as the flags, so every option has a key (`--help` lists them under
/// CONFIG KEYS), values from the file reach the server, flags win, and an unknown key is refused
/// naming the known ones.
final class ConfigKeysTests: ToolTestCase {
    /// The long options of a `--help` text's OPTIONS section.
    private func options(in help: String) -> [String] {
        let section = help.components(separatedBy: "OPTIONS:").dropFirst().first?.components(separatedBy: "\n\n").first ?? ""
        return section.split(separator: "\n").compactMap { line -> String? in
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            guard let start = trimmed.range(of: "--") else { return nil }
            guard trimmed.hasPrefix("--") || trimmed.hasPrefix("-") else { return nil }
            return String(trimmed[start.upperBound...].prefix { $0.isLetter || $0.isNumber || $0 == "-" })
        }
    }

    func testEveryServeAndStubOptionHasAConfigKeyInItsHelp() throws {
        for (command, shared) in [("serve", Set<String>()), ("stub", Set(["provider", "protect", "resolve", "httpdns-only", "allow-private", "cacert", "check"]))] {
            let help = try run([command, "--help"]).stdoutText
            let keys = help.components(separatedBy: "CONFIG KEYS:").dropFirst().first?.replacingOccurrences(of: "\n", with: " ") ?? ""
            let listed = options(in: help).filter { !["config", "help"].contains($0) && !shared.contains($0) }
            XCTAssertGreaterThan(listed.count, 8, help)
            for option in listed {
                XCTAssertTrue(keys.contains("(--\(option))") || keys.contains("(--\(option),"), "\(command) --\(option) has no config key: \(keys)")
            }
        }
        // SIGHUP's reach comes from the same rows: the help says it of exactly the files reloaded.
        let serveText = try run(["serve", "--help"]).stdoutText
        let blocks = serveText.components(separatedBy: "\n  --").dropFirst().map { $0.split(whereSeparator: \.isWhitespace).joined(separator: " ") }
        let reloaded = blocks.filter { $0.contains("Reloaded on SIGHUP.") }.compactMap { $0.split(separator: " ").first.map(String.init) }
        XCTAssertEqual(Set(reloaded), ["zone", "views", "tls-cert", "tls-key", "tls-ticket-keys", "access-log"], serveText)
        // The CLI's default is the library's (it was 5 s in the CLI, 1.5 s in the library).
        let serveHelp = try run(["serve", "--help"]).stdoutText
        XCTAssertTrue(serveHelp.contains("Time limit of each upstream attempt (0-3600). Default 1.5."), serveHelp)
    }

    /// The issue's examples: `drainDelay` and `trustedProxies` in the file reach the server; a flag
    /// overrides the file; an unknown key exits 64 naming the known ones.
    func testServeTakesDrainDelayAndTrustedProxiesFromTheFile() throws {
        let directory = try temporaryDirectory()
        try Data(#"{"www.example.test": {"A": ["192.0.2.10"], "ttl": 60}}"#.utf8).write(to: directory.appendingPathComponent("zone.json"))
        let config = directory.appendingPathComponent("config.json")
        try Data(#"{"serve": {"zone": "zone.json", "drainDelay": 1, "trustedProxies": ["127.0.0.1/32"], "listen": "127.0.0.1:0", "maxConnections": 50}}"#.utf8)
            .write(to: config)
        let (server, urls) = try startServe(["--config", config.path])
        // The zone path is relative to the file; the trusted proxy's X-Forwarded-For names the client.
        let port = try XCTUnwrap(urls[0].split(separator: ":").last.flatMap { Int($0) })
        let client = try RawHTTPClient(port: port, source: "127.0.0.1")
        client.send("GET /d?dn=www.example.test&clientip=1 HTTP/1.1\r\nHost: t\r\nX-Forwarded-For: 198.51.100.4\r\n\r\n")
        XCTAssertEqual(client.readResponse(timeout: 10).body, "192.0.2.10|198.51.100.4")
        // drainDelay 1: /ready answers 503 for about a second after SIGTERM, before the drain.
        let began = ContinuousClock.now
        server.send(SIGTERM)
        var sawDraining = false
        while !sawDraining, ContinuousClock.now - began < .milliseconds(800) {
            sawDraining = try curl("\(urls[0])/ready").code == "503"
        }
        XCTAssertTrue(sawDraining, "/ready answers 503 during the file's drain delay, the listener still accepting")
        XCTAssertEqual(try server.wait(timeout: .seconds(20)), 0)
        XCTAssertGreaterThanOrEqual(ContinuousClock.now - began, .milliseconds(900), "the drain delay from the file")

        try Data(#"{"serve": {"drainDelai": 1}}"#.utf8).write(to: config)
        let misspelt = try run(["serve", "--config", config.path])
        assertUsage(misspelt)
        XCTAssertTrue(misspelt.stderrText.contains("unknown key \"drainDelai\""), misspelt.stderrText)
        XCTAssertTrue(misspelt.stderrText.contains("drainDelay"), "the known keys are named: \(misspelt.stderrText)")
        try Data(#"{"serve": {"reusePort": 1}}"#.utf8).write(to: config)
        assertUsage(try run(["serve", "--config", config.path]))
    }

    /// The stub's own object: its listen address and upstreams from the file, a flag overriding one.
    func testStubTakesItsOptionsFromTheFile() throws {
        let upstream = try SlowTXTUpstream(delay: .zero)
        defer { upstream.stop() }
        let directory = try temporaryDirectory()
        let config = directory.appendingPathComponent("config.json")
        try Data(#"{"stub": {"listen": "127.0.0.1:0", "upstreams": ["udp=127.0.0.1:\#(upstream.port)"], "rateLimit": 0}}"#.utf8).write(to: config)
        let stub = try runner.start(["stub", "--config", config.path])
        addCleanup { stub.send(SIGKILL) }
        let line = try stub.waitForLine(startingWith: "listening on ")
        let port = try XCTUnwrap(line.split(separator: ":").last.flatMap { UInt16($0) }, line)
        let udp = try RawSocket(datagram: true)
        try udp.sendDatagram(StubDrainTests.query(id: 3, "file.example.test"), port: port)
        let answer = try XCTUnwrap(udp.receiveDatagram(within: 3000))
        XCTAssertTrue(String(decoding: answer, as: UTF8.self).contains("slow"), "the file's upstream answered")
        try Data(#"{"stub": {"upstream": ["udp=127.0.0.1:53"]}}"#.utf8).write(to: config)
        let singular = try run(["stub", "--config", config.path])
        assertUsage(singular)
        XCTAssertTrue(singular.stderrText.contains("unknown key \"upstream\""), singular.stderrText)
    }
}
