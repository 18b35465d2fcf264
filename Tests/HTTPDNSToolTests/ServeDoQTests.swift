import Foundation
import HTTPDNSCore
import HTTPDNSTestSupport
import HTTPServing
import XCTest

/// `httpdns serve --listen quic://…`: DNS over QUIC (RFC 9250) from the built binary, asked by
/// dnspython's DoQ client and by aioquic directly (``DoQClient``): the view-correct answer with
/// message ID 0, padding, two queries on one connection, TLS session resumption, garbage streams
/// and noise refused (DOQ_PROTOCOL_ERROR) while the server goes on answering, metrics and the access
/// log by transport, Version Negotiation, Retry under a crowd of handshakes, the connection limits,
/// the idle timeout, the certificate reload, and a drain that answers every query it received, then
/// closes with DOQ_NO_ERROR.
final class ServeDoQTests: ToolTestCase {
    private var certificates: TestCertificates!
    private var leaf: TestCertificates.Leaf!
    private var directory: URL!

    override func setUpWithError() throws {
        try super.setUpWithError()
        certificates = try TestCertificates()
        leaf = try certificates.issue(dnsNames: ["dns.example.test"], ipAddresses: [HTTPDNSIPAddress("127.0.0.1")!])
        directory = try temporaryDirectory()
        try Data(#"{"views": [{"name": "carrier-a", "networks": ["10.1.0.0/16"]}]}"#.utf8)
            .write(to: directory.appendingPathComponent("views.json"))
        try Data(#"{"www.example.test": {"A": ["192.0.2.1"], "ttl": 60, "views": {"carrier-a": {"A": ["198.51.100.1"]}}}}"#.utf8)
            .write(to: directory.appendingPathComponent("zone.json"))
    }

    override func tearDown() {
        certificates?.remove()
        super.tearDown()
    }

    /// Starts serve with a DoQ listener and a plain HTTP one (for /metrics); their ports.
    private func serve(_ extra: [String]) throws -> (server: RunningTool, doq: Int, http: String) {
        let (server, urls) = try startServe(
            [
                "--listen", "quic://127.0.0.1:0", "--listen", "http://127.0.0.1:0", "--tls-cert", leaf.certificatePath,
                "--tls-key", leaf.keyPath, "--zone", directory.appendingPathComponent("zone.json").path,
                "--views", directory.appendingPathComponent("views.json").path,
            ] + extra, listeners: 2)
        XCTAssertTrue(urls[0].hasPrefix("quic://127.0.0.1:"), urls[0])
        return (server, try port(of: urls[0]), urls[1])
    }

    private func ask(_ port: Int, _ arguments: [String]) throws -> [String: Any] {
        try XCTUnwrap(try DoQClient.run(["query", String(port), certificates.caCertificatePath] + arguments) as? [String: Any])
    }

    private func metrics(_ url: String) throws -> String {
        let (status, output) = try RunningTool.runToEnd("/usr/bin/curl", ["-sS", "--max-time", "10", "\(url)/metrics"])
        XCTAssertEqual(status, 0, output)
        return output
    }

    func testDnspythonGetsTheViewCorrectAnswerWithIDZeroOnOneConnectionAndItIsCountedAndLogged() throws {
        let log = directory.appendingPathComponent("access.log").path
        let (server, doq, http) = try serve(["--access-log", log])
        defer { assertStopsCleanly(server) }
        let plain = try ask(doq, ["www.example.test"])
        XCTAssertEqual(plain["a"] as? [String], ["192.0.2.1"], "the peer's view: \(plain)")
        XCTAssertEqual(plain["id"] as? Int, 0, "RFC 9250 §4.2.1: the answer's ID is the query's 0")
        XCTAssertEqual(plain["padded"] as? Bool, false)
        XCTAssertEqual(try ask(doq, ["www.example.test", "ecs=10.1.2.0/24"])["a"] as? [String], ["198.51.100.1"], "the subnet's view")
        // RFC 8467 §4.1 as over TLS: a padded query gets a response padded to a multiple of 468 bytes.
        let padded = try ask(doq, ["www.example.test", "pad"])
        XCTAssertEqual(padded["padded"] as? Bool, true)
        XCTAssertEqual((padded["length"] as? Int).map { $0 % 468 }, 0, "\(padded)")
        let two = try XCTUnwrap(
            try DoQClient.run(["two", String(doq), certificates.caCertificatePath, "www.example.test"]) as? [String: Any])
        XCTAssertEqual(two["a"] as? [[String]], [["192.0.2.1"], ["192.0.2.1"]], "\(two)")
        XCTAssertEqual(two["ids"] as? [Int], [0, 0])
        // A client coming back with the session ticket it got resumes its TLS session.
        let resumed = try XCTUnwrap(
            try DoQClient.run(["resume", String(doq), certificates.caCertificatePath, "www.example.test"]) as? [String: Any])
        XCTAssertEqual(resumed["resumed"] as? [Bool], [false, true], "\(resumed)")
        XCTAssertEqual(resumed["a"] as? [[String]], [["192.0.2.1"], ["192.0.2.1"]])

        let text = try metrics(http)
        XCTAssertTrue(text.contains(#"httpdns_queries_total{endpoint="doq"} 7"#), text)
        XCTAssertTrue(text.contains(#"httpdns_view_queries_total{view="carrier-a"} 1"#), text)
        var lines: [Substring] = []
        _ = pollUntilBlocking(within: .seconds(10)) {
            lines = String(decoding: FileManager.default.contents(atPath: log) ?? Data(), as: UTF8.self).split(separator: "\n")
            return lines.count >= 7
        }
        XCTAssertEqual(lines.count, 7)
        XCTAssertTrue(lines.allSatisfy { $0.contains(#""protocol":"doq","endpoint":"doq""#) }, lines.joined(separator: "\n"))
        XCTAssertTrue(lines[0].contains(#""client":"127.0.0.1""#), String(lines[0]))
    }

    func testGarbageStreamsCloseTheirConnectionWithProtocolErrorAndTheServerGoesOn() throws {
        let (server, doq, _) = try serve([])
        defer { assertStopsCleanly(server) }
        let garbage = try XCTUnwrap(try DoQClient.run(["garbage", String(doq), certificates.caCertificatePath]) as? [String: Any])
        // Datagrams of noise first (no answer, no crash); then DOQ_PROTOCOL_ERROR (0x2) for a stream
        // that is no query, a query whose ID is not 0, and bytes past the message.
        XCTAssertEqual(garbage["codes"] as? [Int], [2, 2, 2], "\(garbage)")
        XCTAssertEqual(try ask(doq, ["www.example.test"])["a"] as? [String], ["192.0.2.1"], "the server stopped answering")
    }

    func testOtherVersionsAreNegotiatedAndTheLimitsAndIdleTimeoutHold() throws {
        let (server, doq, http) = try serve(["--max-connections-per-client", "2", "--dot-idle-timeout", "1"])
        defer { assertStopsCleanly(server) }
        // RFC 9000 §6: an unknown version gets Version Negotiation (version 0) offering QUIC v1,
        // addressed to the client's own connection ID.
        let negotiated = try XCTUnwrap(
            try DoQClient.run(["negotiate", String(doq), certificates.caCertificatePath]) as? [String: Any])
        XCTAssertEqual(negotiated["version"] as? Int, 0, "\(negotiated)")
        XCTAssertTrue((negotiated["versions"] as? [Int])?.contains(1) == true, "\(negotiated)")
        XCTAssertEqual(negotiated["dcid"] as? [Int], Array(8..<16))
        // The HTTP server's per-client limit counts QUIC connections: a third from one client is refused.
        let limit = try XCTUnwrap(
            try DoQClient.run(["limit", String(doq), certificates.caCertificatePath, "2", "www.example.test"]) as? [String: Any])
        XCTAssertEqual(limit["refused"] as? Bool, true, "a third connection from one client was taken: \(limit)")
        XCTAssertEqual(limit["a"] as? [[String]], [["192.0.2.1"], ["192.0.2.1"]], "a connection within the limit stopped answering")
        XCTAssertTrue(try metrics(http).contains(#"httpdns_shed_total{reason="per-client"} 1"#))
        // The UDP port is the listener's alone: a second serve on it fails, as on a TCP port.
        let taken = try run([
            "serve", "--listen", "quic://127.0.0.1:\(doq)", "--tls-cert", leaf.certificatePath, "--tls-key", leaf.keyPath,
        ])
        XCTAssertEqual(taken.status, 1)
        XCTAssertTrue(taken.stderrText.contains("cannot listen on 127.0.0.1:\(doq): Address already in use (EADDRINUSE)"), taken.stderrText)
        let bare = try run(["serve", "--listen", "quic://127.0.0.1:0"])
        XCTAssertEqual(bare.status, 64)
        XCTAssertTrue(bare.stderrText.contains("is DNS over QUIC: it needs --tls-cert and --tls-key"), bare.stderrText)
        // --dot-idle-timeout is QUIC's idle timeout.
        let idle = try XCTUnwrap(try DoQClient.run(["idle", String(doq), certificates.caCertificatePath, "www.example.test"]) as? [String: Any])
        XCTAssertEqual(idle["a"] as? [String], ["192.0.2.1"])
        let seconds = try XCTUnwrap(idle["closed_after"] as? Double, "\(idle)")
        XCTAssertGreaterThan(seconds, 0.8)
        XCTAssertLessThan(seconds, 4)
        XCTAssertTrue(try pollUntilBlocking(within: .seconds(5)) { try metrics(http).contains("httpdns_open_connections 1\n") })
    }

    func testACrowdOfUnfinishedHandshakesMakesNewClientsProveTheirAddressWithARetry() throws {
        let (server, doq, _) = try serve(["--handshake-timeout", "3"])
        defer { assertStopsCleanly(server) }
        // 64 handshakes in progress (the server's threshold): the 65th client gets a Retry (RFC 9000
        // §8.1.2) instead of a connection; the first got an ordinary Initial; dnspython's client
        // comes back with the Retry's token and is answered.
        let retry = try XCTUnwrap(
            try DoQClient.run(["retry", String(doq), certificates.caCertificatePath, "64", "www.example.test"]) as? [String: Any])
        XCTAssertEqual(retry["extra"] as? Int, 3, "no Retry past 64 handshakes: \(retry)")
        XCTAssertEqual(retry["first"] as? Int, 0, "\(retry)")
        XCTAssertEqual(retry["a"] as? [String], ["192.0.2.1"], "\(retry)")
    }

    func testSIGHUPReloadsTheCertificateForNewConnections() throws {
        let (server, doq, _) = try serve([])
        defer { assertStopsCleanly(server) }
        XCTAssertEqual(try ask(doq, ["www.example.test"])["a"] as? [String], ["192.0.2.1"])
        // A certificate from another CA in the same files: after SIGHUP new connections get it.
        let other = try TestCertificates(commonName: "second test CA")
        defer { other.remove() }
        let renewed = try other.issue(dnsNames: ["dns.example.test"], ipAddresses: [HTTPDNSIPAddress("127.0.0.1")!])
        try Data(renewed.certificatePEM.utf8).write(to: URL(fileURLWithPath: leaf.certificatePath))
        try Data(renewed.keyPEM.utf8).write(to: URL(fileURLWithPath: leaf.keyPath))
        server.send(SIGHUP)
        XCTAssertTrue(pollUntilBlocking(within: .seconds(10)) {
            String(decoding: server.stderr, as: UTF8.self).contains("reloaded certificate")
        }, String(decoding: server.stderr, as: UTF8.self))
        let renewedAnswer = try DoQClient.run(["verify", String(doq), other.caCertificatePath, "www.example.test"]) as? [String: Any]
        XCTAssertEqual(renewedAnswer?["a"] as? [String], ["192.0.2.1"], "\(String(describing: renewedAnswer))")
        let oldAnswer = try DoQClient.run(["verify", String(doq), certificates.caCertificatePath, "www.example.test"]) as? [String: Any]
        XCTAssertNil(oldAnswer?["a"], "the old certificate is still served")
        XCTAssertNotNil(oldAnswer?["error"])
    }

    func testTheDrainAnswersEveryQueryReceivedThenClosesWithNoError() throws {
        let (server, doq, _) = try serve(["--drain-timeout", "20"])
        let client = try DoQClient.start(["drain", String(doq), certificates.caCertificatePath, "www.example.test", "4", "60"])
        _ = try client.waitForLine(startingWith: "half", timeout: .seconds(30))
        server.send(SIGTERM)
        XCTAssertEqual(try client.wait(timeout: .seconds(60)), 0, String(decoding: client.stderr, as: UTF8.self))
        let line = String(decoding: client.stdout, as: UTF8.self).split(separator: "\n").last.map(String.init) ?? ""
        let result = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], line)
        XCTAssertEqual(result["sent"] as? Int, 240)
        XCTAssertEqual(result["answered"] as? Int, 240, "\(result); client stderr: \(String(decoding: client.stderr, as: UTF8.self))")
        XCTAssertEqual(result["closes"] as? [Int], [0, 0, 0, 0], "not every connection was closed with DOQ_NO_ERROR: \(result)")
        assertStopsCleanly(server, signalled: true)
        XCTAssertFalse(String(decoding: server.stderr, as: UTF8.self).contains("cut"), String(decoding: server.stderr, as: UTF8.self))
    }

    func testAQueryLeftHalfSentIsCutAtTheDrainTimeoutAndCounted() throws {
        let (server, doq, _) = try serve(["--drain-timeout", "1"])
        let client = try DoQClient.start(["half", String(doq), certificates.caCertificatePath, "www.example.test"])
        _ = try client.waitForLine(startingWith: "sent", timeout: .seconds(30))
        server.send(SIGTERM)
        XCTAssertEqual(try client.wait(timeout: .seconds(30)), 0, String(decoding: client.stderr, as: UTF8.self))
        let line = String(decoding: client.stdout, as: UTF8.self).split(separator: "\n").last.map(String.init) ?? ""
        XCTAssertEqual(line, #"{"code": 0}"#, "the drain's end did not close with DOQ_NO_ERROR")
        assertStopsCleanly(server, signalled: true)
        let stderr = String(decoding: server.stderr, as: UTF8.self)
        XCTAssertTrue(stderr.contains("the drain cut 1 connection still busy"), stderr)
    }
}
