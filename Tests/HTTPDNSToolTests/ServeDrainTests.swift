import Foundation
import HTTPDNSCore
import HTTPDNSTestSupport
import XCTest

/// `httpdns serve` on SIGTERM drains without losing a request: h2load (HTTP/1.1 and HTTP/2) sees
/// every request it started answered, and a request sent on an open keep-alive connection after
/// the signal is answered with `Connection: close` (issue 25).
final class ServeDrainTests: ToolTestCase {
    /// Requests h2load is asked for: far more than it finishes before the signal lands (it is sent
    /// at 10 % of them), so that every run is cut mid-way.
    private let requestsPerRun = 100_000

    func testH2LoadHTTP1SeesEveryStartedRequestAnsweredAcrossTheDrain() throws {
        let zone = try zoneFile()
        for round in 1...10 {
            let server = try runner.start(["serve", "--listen", "127.0.0.1:0", "--zone", zone.path, "--threads", "2", "--drain-timeout", "2"])
            let url = try listeningURL(server)
            try drainUnderLoad(server, h2load: ["--h1", "-c", "16", "-n", String(requestsPerRun), url + "/d?dn=www.example.test"], round: round)
        }
    }

    func testH2LoadHTTP2SeesEveryStartedRequestAnsweredAcrossTheDrain() throws {
        let zone = try zoneFile()
        let certificates = try TestCertificates()
        defer { certificates.remove() }
        let leaf = try certificates.issue(dnsNames: ["localhost"], ipAddresses: [HTTPDNSIPAddress("127.0.0.1")!])
        for round in 1...10 {
            let server = try runner.start([
                "serve", "--listen", "https://127.0.0.1:0", "--tls-cert", leaf.certificatePath, "--tls-key", leaf.keyPath,
                "--zone", zone.path, "--threads", "2", "--drain-timeout", "2",
            ])
            let url = try listeningURL(server)
            XCTAssertTrue(url.hasPrefix("https://"), url)
            try drainUnderLoad(server, h2load: ["-c", "16", "-n", String(requestsPerRun), url + "/d?dn=www.example.test"], round: round)
        }
    }

    /// A request sent on an open keep-alive connection once the drain has begun (the listener is
    /// closed) is answered in full, says `Connection: close`, and the server then closes; `/ready`
    /// answers `503 draining` and `/health` `200 alive` (the process still answers) the same way; a
    /// request sent the instant SIGTERM goes is answered too.
    func testKeepAliveRequestAfterSIGTERMIsAnsweredWithConnectionClose() throws {
        let zone = try zoneFile()
        let server = try runner.start(["serve", "--listen", "127.0.0.1:0", "--zone", zone.path, "--threads", "2", "--drain-timeout", "10"])
        let url = try listeningURL(server)
        let port = try XCTUnwrap(url.split(separator: ":").last.flatMap { Int($0) })
        let request = "GET /d?dn=www.example.test HTTP/1.1\r\nHost: t\r\n\r\n"
        let clients = try (0..<4).map { _ in try RawHTTPClient(port: port) }
        for client in clients {
            client.send(request)
            XCTAssertEqual(client.readResponse(timeout: 10).body, "192.0.2.10", "before the signal")
        }

        server.send(SIGTERM)
        clients[0].send(request)  // races the signal: answered either way
        // The drain has begun once the listener is closed.
        let deadline = ContinuousClock.now + .seconds(10)
        while (try? RawHTTPClient(port: port)) != nil, ContinuousClock.now < deadline { usleep(5_000) }
        XCTAssertThrowsError(try RawHTTPClient(port: port), "the listener closes first")
        XCTAssertTrue(server.isRunning, "still draining: the keep-alive connections are open")
        clients[1].send(request)
        clients[2].send("GET /ready HTTP/1.1\r\nHost: t\r\n\r\n")
        clients[3].send("GET /health HTTP/1.1\r\nHost: t\r\n\r\n")

        let racing = clients[0].readResponse(timeout: 10)
        XCTAssertEqual(racing.status, 200)
        XCTAssertEqual(racing.body, "192.0.2.10")
        for (client, status, body) in [
            (clients[1], "200 OK", "192.0.2.10"), (clients[2], "503 Service Unavailable", "draining\n"), (clients[3], "200 OK", "alive\n"),
        ] {
            let answer = client.readAll(timeout: 10)
            let text = String(decoding: answer.data, as: UTF8.self)
            XCTAssertTrue(text.hasPrefix("HTTP/1.1 \(status)\r\n"), text)
            XCTAssertTrue(text.lowercased().contains("\r\nconnection: close\r\n"), text)
            XCTAssertTrue(text.hasSuffix("\r\n\r\n" + body), text)
            XCTAssertTrue(answer.closed, "the server closes after the answer")
            XCTAssertFalse(answer.reset, "closed, not reset")
        }
        assertCleanStop(server)
    }

    /// `--drain-delay`: for that long after SIGTERM the listener still takes new connections and
    /// answers them as before, but `/ready` says `503 draining`, so that a balancer's check (a new
    /// connection each time) sees the drain coming and stops sending before the listener closes.
    /// Without it a fleet behind HAProxy kept getting new connections for the 200 ms the checks
    /// took, each of which waited a second for its SYN to be retried (issue 24's rolling restart).
    func testDrainDelayKeepsAcceptingWhileReadySaysDraining() throws {
        let zone = try zoneFile()
        let server = try runner.start(["serve", "--listen", "127.0.0.1:0", "--zone", zone.path, "--drain-delay", "3", "--drain-timeout", "2"])
        let port = try XCTUnwrap(Int(try listeningURL(server).split(separator: ":").last ?? ""))
        func ask(_ path: String) throws -> (status: Int, body: String) {
            let client = try RawHTTPClient(port: port)
            client.send("GET \(path) HTTP/1.1\r\nHost: t\r\n\r\n")
            let answer = client.readResponse(timeout: 10)
            return (answer.status, answer.body)
        }
        XCTAssertEqual(try ask("/ready").body, "ready\n")

        let signalled = ContinuousClock.now
        server.send(SIGTERM)
        XCTAssertTrue(pollUntilBlocking { (try? ask("/ready"))?.status == 503 }, "/ready says 503 once signalled")
        let ready = try ask("/ready")
        let query = try ask("/d?dn=www.example.test")
        let asked = ContinuousClock.now - signalled
        XCTAssertEqual(ready.status, 503)
        XCTAssertEqual(ready.body, "draining\n")
        XCTAssertEqual(query.status, 200, "a new connection's query is answered within the delay")
        XCTAssertEqual(query.body, "192.0.2.10")
        XCTAssertLessThan(asked, .seconds(3), "asked within the delay (a slow machine: lengthen it)")

        XCTAssertTrue(pollUntilBlocking(within: .seconds(15)) { (try? RawHTTPClient(port: port)) == nil }, "the listener closes after the delay")
        XCTAssertGreaterThanOrEqual(ContinuousClock.now - signalled, .seconds(3), "not before the delay")
        assertCleanStop(server)
    }

    // MARK: Helpers

    /// One run: h2load against `server`, SIGTERM at 10 % of the requests, then h2load's counts.
    private func drainUnderLoad(_ server: RunningTool, h2load arguments: [String], round: Int) throws {
        let load = try RunningTool(executable: URL(fileURLWithPath: "/usr/bin/h2load"), arguments: arguments)
        _ = try load.waitForLine(startingWith: "progress: 10% done", timeout: .seconds(120))
        server.send(SIGTERM)
        _ = try load.wait(timeout: .seconds(120))
        let output = String(decoding: load.stdout, as: UTF8.self)
        let counts = try XCTUnwrap(Self.requestCounts(output), "round \(round): no requests line in\n\(output)")
        XCTAssertLessThan(counts.started, counts.total, "round \(round): the signal lands mid-run\n\(output)")
        XCTAssertEqual(counts.done, counts.started, "round \(round): every started request is done\n\(output)")
        XCTAssertEqual(counts.succeeded, counts.started, "round \(round): every started request succeeds\n\(output)")
        XCTAssertTrue(output.contains("status codes: \(counts.succeeded) 2xx,"), "round \(round): all 200\n\(output)")
        assertCleanStop(server, round: round)
    }

    /// Exit 0 on SIGTERM (within the drain) and no sanitizer report on stderr.
    private func assertCleanStop(_ server: RunningTool, round: Int = 0, file: StaticString = #filePath, line: UInt = #line) {
        let status = try? server.wait(timeout: .seconds(30))
        let stderr = String(decoding: server.stderr, as: UTF8.self)
        XCTAssertEqual(status, 0, "round \(round): exit status on SIGTERM; stderr:\n\(stderr)", file: file, line: line)
        XCTAssertEqual(server.sanitizerReports, [], "round \(round): sanitizer reports:\n\(stderr)", file: file, line: line)
    }

    /// h2load's `requests: N total, N started, N done, N succeeded, N failed, N errored, N timeout` line.
    static func requestCounts(_ output: String) -> (total: Int, started: Int, done: Int, succeeded: Int, failed: Int, errored: Int, timeout: Int)? {
        guard let line = output.split(separator: "\n").first(where: { $0.hasPrefix("requests: ") }) else { return nil }
        var numbers: [String: Int] = [:]
        for part in line.dropFirst("requests: ".count).split(separator: ",") {
            let words = part.split(separator: " ")
            guard words.count == 2, let value = Int(words[0]) else { return nil }
            numbers[String(words[1])] = value
        }
        guard let total = numbers["total"], let started = numbers["started"], let done = numbers["done"],
              let succeeded = numbers["succeeded"], let failed = numbers["failed"], let errored = numbers["errored"],
              let timeout = numbers["timeout"]
        else { return nil }
        return (total, started, done, succeeded, failed, errored, timeout)
    }

    private func zoneFile() throws -> URL {
        let zone = try temporaryDirectory().appendingPathComponent("zone.json")
        try Data(#"{"www.example.test": {"A": ["192.0.2.10"], "ttl": 60}}"#.utf8).write(to: zone)
        return zone
    }

    private func listeningURL(_ server: RunningTool) throws -> String {
        String(try server.waitForLine(startingWith: "listening on ").dropFirst("listening on ".count))
    }
}
