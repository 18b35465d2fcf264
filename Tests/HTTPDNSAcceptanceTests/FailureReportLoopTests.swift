import Foundation
import HTTPDNSCore
import HTTPDNSTestSupport
import XCTest

/// Issue 22's loop end to end (seed 002's "upload an error log and ask whether the address set
/// should change"), with the built `httpdns` binary on both sides, in network namespaces of the
/// test's own (``CarrierNetworks``): `httpdns serve` and an nginx origin on three addresses run in the
/// core; carrier A's subscribers are three client /24s, carrier B's one; each client is an
/// `httpdns fetch --report` process run inside its network's namespace, so the server sees it from
/// its network's address, as it would see an app there.
///
/// Carrier A drops its subscribers' traffic to one origin address (an nftables rule in the core
/// matching A's source range), while the server itself and carrier B still reach it.
final class FailureReportLoopTests: XCTestCase {
    static let host = "app.loop.test"
    static let reportToken = "loop-report-token"
    static let adminToken = "loop-admin-token-0123456789"
    static let account = "loop-account"
    static let secret = "loop-account-secret"
    /// Carrier A's client networks (198.18.n.0/24) and carrier B's.
    static let carrierA = [1, 2, 3]
    static let carrierB = [8]

    private var networks: CarrierNetworks!
    private var certificates: TestCertificates!
    private var directory: URL!
    private var tool: String!
    private var base: String { "http://\(networks.serverAddress)" }
    private var blocked: String { networks.origins[0] }

    override func setUpWithError() throws {
        tool = try ToolRunner.locate().path
        networks = try CarrierNetworks(networks: Self.carrierA + Self.carrierB)
        do {
            certificates = try TestCertificates()
            directory = FileManager.default.temporaryDirectory.appendingPathComponent("httpdns-loop-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            let leaf = try certificates.issue(dnsNames: [Self.host])
            try startOrigin(leaf)
            try startServer()
        } catch {
            tearDown()
            throw error
        }
    }

    override func tearDown() {
        networks?.remove()
        certificates?.remove()
        if let directory { try? FileManager.default.removeItem(at: directory) }
    }

    // MARK: - The loop

    func testCarrierAsAppsReportTheOriginItBlocksAndOnlyItsViewMovesAway() throws {
        let a = Self.carrierA.map { networks.clients[$0]! }, b = networks.clients[Self.carrierB[0]]!
        let o = networks.origins
        XCTAssertEqual(try answer(from: a[0]), o, "carrier A's view")
        XCTAssertEqual(try answer(from: b), [o[0], o[2], o[1]], "carrier B's view")
        let before = try fetch(from: a[0])
        XCTAssertEqual(before.served, o[0], "before the block, carrier A's apps use the first address: \(before.log)")

        // Carrier A starts dropping its subscribers' packets to the first origin address.
        try networks.nft("""
            table inet carrier-a {
              chain input {
                type filter hook input priority 0; policy accept;
                ip saddr 198.18.0.0/22 ip daddr \(blocked) meta l4proto tcp drop
              }
            }
            """)
        XCTAssertTrue(try reaches(blocked, from: b), "carrier B still reaches it")

        // Carrier A's apps: the blocked address is raced past, another one serves, and the
        // blocked one, timing out within the connect timeout, is reported before the process exits.
        for (index, client) in a.enumerated() {
            let result = try fetch(from: client)
            XCTAssertTrue([o[1], o[2]].contains(result.served), "\(client): \(result.log)")
            XCTAssertTrue(result.log.contains("* \(blocked) port 443 failed"), "\(client): \(result.log)")
            XCTAssertTrue(result.log.contains(", 0 not sent, 0 dropped"), "\(client): its reports went before it exited: \(result.log)")
            if index < a.count - 1 {
                // Below the threshold: counted, nothing decided.
                let reports = try reportStatus()
                XCTAssertEqual((reports["decisions"] as? [Any])?.count, 0, "\(reports)")
                let pair = (reports["busiest"] as? [[String: Any]])?.first { $0["address"] as? String == blocked }
                XCTAssertEqual(pair?["view"] as? String, "carrier-a", "\(reports)")
                XCTAssertEqual(pair?["networks"] as? Int, index + 1, "\(reports)")
            }
        }

        // The third network reached the threshold: the server probes the address itself (it is
        // not behind carrier A's rule, so the probe passes) and demotes it in carrier A's view only.
        let decision = try waitForDecision()
        XCTAssertEqual((try reportStatus()["decisions"] as? [Any])?.count, 1, "one decision")
        XCTAssertEqual(decision["decision"] as? String, "demoted", "\(decision)")
        XCTAssertEqual(decision["address"] as? String, blocked)
        XCTAssertEqual(decision["view"] as? String, "carrier-a")
        XCTAssertEqual(decision["host"] as? String, Self.host)
        XCTAssertEqual(decision["port"] as? Int, 443)
        XCTAssertEqual(decision["networks"] as? Int, a.count)
        let status = try statusDocument()
        let counts = try XCTUnwrap((status["reports"] as? [String: Any])?["counts"] as? [String: Any])
        XCTAssertEqual(counts["reachable"] as? Int, 1, "the server's own probe passed: \(counts)")
        XCTAssertEqual(counts["unreachable"] as? Int, 0, "\(counts)")
        XCTAssertEqual(counts["down"] as? Int, 0, "\(counts)")
        // One report of the blocked address per network of A; on a loaded machine another address
        // may also have missed the connect timeout once, below the threshold.
        XCTAssertGreaterThanOrEqual(counts["recorded"] as? Int ?? 0, a.count, "\(counts)")
        let origins = try XCTUnwrap((status["health"] as? [String: Any])?["origins"] as? [[String: Any]])
        XCTAssertEqual(origins.first { $0["address"] as? String == blocked }?["state"] as? String, "up", "\(origins)")

        XCTAssertEqual(try answer(from: a[0]), [o[1], o[2], o[0]], "carrier A's view no longer leads with it")
        XCTAssertEqual(try answer(from: a[2]), [o[1], o[2], o[0]])
        XCTAssertEqual(try answer(from: b), [o[0], o[2], o[1]], "carrier B's answer is unchanged")
        let metrics = try self.metrics()
        XCTAssertEqual(metrics[#"httpdns_report_decisions_total{decision="demoted"}"#], 1, "\(metrics)")
        XCTAssertEqual(metrics[#"httpdns_report_decisions_total{decision="down"}"#], 0)
        XCTAssertEqual(metrics[#"httpdns_report_probes_total{result="reachable"}"#], 1)

        // Carrier A's next app gets the blocked address last and is served by another one.
        let after = try fetch(from: a[1])
        XCTAssertTrue(after.log.contains(": \(o[1]), \(o[2]), \(o[0])\n"), after.log)
        XCTAssertTrue([o[1], o[2]].contains(after.served), after.log)
        XCTAssertTrue(try reaches(blocked, from: b), "carrier B's apps still lead with it")
    }

    // MARK: - Reports that must change nothing

    func testForgedExpiredAndOversizedReportsFromCarrierAChangeNothing() throws {
        let a = Self.carrierA.map { networks.clients[$0]! }
        let now = Int(Date().timeIntervalSince1970)
        let item = #"{"host":"\#(Self.host)","address":"\#(blocked)","port":443,"error":"connect-timeout","time":\#(now)}"#
        let body = #"{"reports":[\#(item)]}"#
        // 64 KiB and more: a well-formed batch padded with whitespace.
        let padded = #"{"reports":[\#(item)]"# + String(repeating: " ", count: 64 << 10) + "}"
        let tooMany = #"{"reports":["# + Array(repeating: item, count: 51).joined(separator: ",") + "]}"

        // From each of carrier A's three networks: were any of them recorded, the threshold would be met.
        for client in a {
            XCTAssertEqual(try report(body, authorization: "Bearer \(Self.reportToken)x", from: client), 403, "wrong token")
            XCTAssertEqual(try report(body, authorization: signature(body, expires: now + 600, secret: "not-the-secret"), from: client), 403,
                           "forged signature")
            XCTAssertEqual(try report(body, authorization: signature(body, expires: now - 60), from: client), 403, "expired")
            XCTAssertEqual(try report(body, authorization: nil, from: client), 401, "no credential")
            XCTAssertEqual(try report(padded, authorization: "Bearer \(Self.reportToken)", from: client), 413, "over 64 KiB")
            XCTAssertEqual(try report(tooMany, authorization: "Bearer \(Self.reportToken)", from: client), 400, "over 50 items")
        }
        let reports = try reportStatus()
        XCTAssertEqual((reports["decisions"] as? [Any])?.count, 0, "\(reports)")
        XCTAssertEqual((reports["tracked"] as? [String: Any])?["addresses"] as? Int, 0, "nothing recorded: \(reports)")
        let counts = try XCTUnwrap(reports["counts"] as? [String: Any])
        XCTAssertEqual(counts["recorded"] as? Int, 0, "\(counts)")
        XCTAssertEqual(counts["accepted"] as? Int, 0, "\(counts)")
        XCTAssertEqual(counts["reachable"] as? Int, 0, "no probe: \(counts)")
        XCTAssertEqual(try answer(from: a[0]), networks.origins, "carrier A's view is as the zone says")
        let metrics = try self.metrics()
        XCTAssertEqual(metrics[#"httpdns_report_decisions_total{decision="demoted"}"#], 0, "\(metrics)")
        XCTAssertEqual(metrics[#"httpdns_reports_total{result="forbidden"}"#], Double(3 * a.count), "\(metrics)")

        // The same report, signed with the account's secret and a live expiry, from the same three
        // networks does move carrier A's view: what was refused above was refused for its credential
        // or its size alone.
        for client in a {
            XCTAssertEqual(try report(body, authorization: signature(body, expires: now + 600), from: client), 202)
        }
        XCTAssertEqual(try waitForDecision()["decision"] as? String, "demoted")
        XCTAssertEqual(try answer(from: a[0]).first, networks.origins[1])
    }

    // MARK: - The servers

    /// nginx in the core namespace on the three origin addresses, port 443, answering with the
    /// address that served. Single-process (`master_process off`): stopping it stops everything.
    private func startOrigin(_ leaf: TestCertificates.Leaf) throws {
        let listens = networks.origins.map { "    listen \($0):443 ssl;" }.joined(separator: "\n")
        try networks.startNginx(in: directory, servers: """
              server {
            \(listens)
                server_name \(Self.host);
                ssl_certificate \(leaf.certificatePath);
                ssl_certificate_key \(leaf.keyPath);
                location / { return 200 "origin $server_addr\\n"; }
              }
            """)
    }

    private func startServer() throws {
        let o = networks.origins.map { "\"\($0)\"" }
        let zone = """
            {"\(Self.host)": {"A": [\(o.joined(separator: ", "))], "ttl": 60,
              "check": {"type": "https", "port": 443, "path": "/", "interval": 1, "timeout": 1, "rise": 1, "fall": 2, "jitter": 0},
              "views": {"carrier-a": {"A": [\(o[0]), \(o[1]), \(o[2])]},
                        "carrier-b": {"A": [\(o[0]), \(o[2]), \(o[1])]}}}}
            """
        try write(zone, "zone.json")
        try write("# carrier A's subscribers\n198.18.0.0/22\n", "carrier-a.txt")
        try write("# carrier B's subscribers\n198.18.8.0/22\n", "carrier-b.txt")
        try write(#"{"views": [{"name": "carrier-a", "lists": ["carrier-a.txt"]}, {"name": "carrier-b", "lists": ["carrier-b.txt"]}]}"#, "views.json")
        let server = try networks.start(in: networks.core, tool, [
            "serve", "--listen", "\(networks.serverAddress):80", "--zone", file("zone.json"), "--views", file("views.json"),
            "--report-token", Self.reportToken, "--report-threshold", "\(Self.carrierA.count)",
            "--alibaba-secret", "\(Self.account)=\(Self.secret)", "--admin-token", Self.adminToken,
            "--health-ca", certificates.caCertificatePath,
        ])
        _ = try server.waitForLine(startingWith: "listening on ", timeout: .seconds(20))
    }

    // MARK: - Clients

    /// `httpdns fetch -v --report` of `https://app.loop.test/` from `client`'s network: the address
    /// that served (from the body) and the verbose log.
    private func fetch(from client: CarrierNetworks.Client) throws -> (served: String?, log: String) {
        let result = try networks.run(in: client.namespace, tool, [
            "fetch", "-v", "-s", "--provider", "dnspod=\(base)", "--httpdns-only", "--allow-private",
            "--cacert", certificates.caCertificatePath, "--connect-timeout", "2",
            "--report", "\(base)/report", "--report-token", Self.reportToken, "https://\(Self.host)/",
        ])
        XCTAssertEqual(result.status, 0, "\(client): \(result.stderrText)")
        let body = result.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines)
        let served = body.hasPrefix("origin ") ? String(body.dropFirst("origin ".count)) : nil
        return (served, result.stderrText)
    }

    /// Whether a fetch from `client`'s network is served by `address`. Racing decides which address
    /// serves: on a loaded machine the first may not have finished its TLS handshake within the 250 ms
    /// head start, so up to three fetches are made.
    private func reaches(_ address: String, from client: CarrierNetworks.Client) throws -> Bool {
        for _ in 0..<3 where try fetch(from: client).served == address { return true }
        return false
    }

    /// The DNSPod answer `client`'s network gets.
    private func answer(from client: CarrierNetworks.Client) throws -> [String] {
        let text = try curl(in: client.namespace, ["\(base)/d?dn=\(Self.host)"])
        return text.split(separator: ",").first.map { $0.split(separator: ";").map(String.init) } ?? []
    }

    /// POSTs a report body from `client`'s network; the HTTP status.
    private func report(_ body: String, authorization: String?, from client: CarrierNetworks.Client) throws -> Int {
        let file = directory.appendingPathComponent("report-\(UUID().uuidString).json")
        try body.write(to: file, atomically: true, encoding: .utf8)
        var arguments = ["-o", "/dev/null", "-w", "%{http_code}", "-H", "Content-Type: application/json", "--data-binary", "@\(file.path)"]
        if let authorization { arguments += ["-H", "Authorization: \(authorization)"] }
        return Int(try curl(in: client.namespace, arguments + ["\(base)/report"], check: false)) ?? 0
    }

    /// `HTTPDNS-HMAC-SHA256` over the account, the expiry and the body (`Failover.md`, failure reports).
    private func signature(_ body: String, expires: Int, secret: String = FailureReportLoopTests.secret) -> String {
        let message = Array("\(Self.account)\n\(expires)\n".utf8) + Array(body.utf8)
        let mac = HTTPDNSCrypto.hmacSHA256(key: Array(secret.utf8), message: message)
        let hex = mac.map { String(format: "%02x", $0) }.joined()
        return "HTTPDNS-HMAC-SHA256 account=\(Self.account), expires=\(expires), signature=\(hex)"
    }

    // MARK: - The server's view of things (asked from the core)

    private func statusDocument() throws -> [String: Any] {
        let text = try curl(in: networks.core, ["-H", "Authorization: Bearer \(Self.adminToken)", "\(base)/status"])
        return try XCTUnwrap(JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any], text)
    }

    private func reportStatus() throws -> [String: Any] {
        try XCTUnwrap(try statusDocument()["reports"] as? [String: Any])
    }

    /// The first decision in force, waiting for it (the probe runs after the report is answered).
    private func waitForDecision() throws -> [String: Any] {
        let deadline = Date().addingTimeInterval(10)
        while true {
            let reports = try reportStatus()
            if let decision = (reports["decisions"] as? [[String: Any]])?.first { return decision }
            guard Date() < deadline else { throw ToolRunner.Failure("no decision within 10 s: \(reports)") }
            usleep(50_000)
        }
    }

    /// `/metrics` as series → value.
    private func metrics() throws -> [String: Double] {
        var values: [String: Double] = [:]
        for line in try curl(in: networks.core, ["\(base)/metrics"]).split(separator: "\n") where !line.hasPrefix("#") {
            guard let space = line.lastIndex(of: " "), let value = Double(line[line.index(after: space)...]) else { continue }
            values[String(line[..<space])] = value
        }
        return values
    }

    private func curl(in namespace: String, _ arguments: [String], check: Bool = true) throws -> String {
        let result = try networks.run(in: namespace, "/usr/bin/curl", ["-sS", "--max-time", "10"] + arguments)
        if check, result.status != 0 { throw ToolRunner.Failure("curl \(arguments) failed: \(result.stderrText)") }
        return result.stdoutText
    }

    private func write(_ text: String, _ name: String) throws {
        try text.write(to: directory.appendingPathComponent(name), atomically: true, encoding: .utf8)
    }

    private func file(_ name: String) -> String {
        directory.appendingPathComponent(name).path
    }
}
