import Foundation
import HTTPDNSTestSupport
import XCTest

/// Issue 32, through the binary as an operator meets it: the app token ships in every app, so
/// whoever extracts it can report from many networks. A flood from 30 networks cycling through
/// more pairs than the table holds (`--report-max-addresses 200`, 480 pairs) used to evict the
/// honest pair before its third network came; now the flooders' pairs go first, and three honest
/// networks still decide.
final class ServeReportFloodTests: ToolTestCase {
    private static let token = "fl00d-t0ken"
    private static let admin = "admin-token-0123456789"

    /// A zone with the honest name and 30 flood names of 16 addresses each (480 pairs).
    private func zone() throws -> URL {
        var entries = [#""app.test": {"A": ["127.0.0.41"], "ttl": 60}"#]
        for name in 0..<30 {
            let addresses = (1...16).map { "\"127.1.\(name).\($0)\"" }.joined(separator: ", ")
            entries.append("\"f\(name).test\": {\"A\": [\(addresses)], \"ttl\": 60}")
        }
        let url = try temporaryDirectory().appendingPathComponent("zone.json")
        try Data(("{" + entries.joined(separator: ",\n") + "}").utf8).write(to: url)
        return url
    }

    /// POSTs one batch of `items` (host, address) from `source`; the status.
    private func report(_ items: [(String, String)], from source: String, port: Int) throws -> Int {
        let time = Int(Date().timeIntervalSince1970)
        let body = "{\"reports\":[" + items.map { host, address in
            "{\"host\":\"\(host)\",\"address\":\"\(address)\",\"port\":443,\"error\":\"connect-refused\",\"time\":\(time)}"
        }.joined(separator: ",") + "]}"
        let client = try RawHTTPClient(port: port, source: source)
        client.send("POST /report HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer \(Self.token)\r\nContent-Type: application/json\r\n"
            + "Content-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n" + body)
        return client.readResponse(timeout: 10).status
    }

    private func status(port: Int) throws -> [String: Any] {
        let client = try RawHTTPClient(port: port)
        client.send("GET /status HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer \(Self.admin)\r\nConnection: close\r\n\r\n")
        let body = client.readResponse(timeout: 10).body
        let object = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any], body)
        return try XCTUnwrap(object["reports"] as? [String: Any], body)
    }

    func testAFloodFromManyNetworksLeavesThreeHonestNetworksDeciding() throws {
        let (server, urls) = try startServe([
            "--listen", "127.0.0.1:0", "--zone", try zone().path, "--report-token", Self.token, "--admin-token", Self.admin,
            "--report-threshold", "3", "--report-max-addresses", "200",
        ])
        defer { assertStopsCleanly(server) }
        let port = try XCTUnwrap(urls[0].split(separator: ":").last.flatMap { Int($0) })
        let honest = [("app.test", "127.0.0.41")]
        func flood(_ networks: Range<Int>) throws {
            for network in networks {
                let items = (1...16).map { ("f\(network).test", "127.1.\(network).\($0)") }
                XCTAssertEqual(try report(items, from: "127.100.\(network).1", port: port), 202, "flood batch \(network)")
            }
        }
        XCTAssertEqual(try report(honest, from: "127.200.1.9", port: port), 202)
        try flood(0..<10)
        XCTAssertEqual(try report(honest, from: "127.200.2.9", port: port), 202)
        // 320 more pairs after the second honest report: past the bound of 200 whatever was kept.
        try flood(10..<30)
        XCTAssertEqual(try report(honest, from: "127.200.3.9", port: port), 202)

        // The third network makes the server probe 127.0.0.41 (nothing listens: down) and decide.
        var reports: [String: Any] = [:]
        let deadline = Date().addingTimeInterval(20)
        var decided = false
        while !decided, Date() < deadline {
            reports = try status(port: port)
            let decisions = reports["decisions"] as? [[String: Any]] ?? []
            decided = decisions.contains { $0["address"] as? String == "127.0.0.41" && ($0["networks"] as? Int ?? 0) >= 3 }
            if !decided { usleep(100_000) }
        }
        XCTAssertTrue(decided, "three honest networks decided despite the flood: \(reports)")
        let evicted = reports["evicted"] as? [String: Any] ?? [:]
        XCTAssertGreaterThan(evicted["addresses"] as? Int ?? 0, 0, "the flood overflowed the table: \(reports)")
        let tracked = reports["tracked"] as? [String: Any] ?? [:]
        XCTAssertLessThanOrEqual(tracked["addresses"] as? Int ?? .max, 200, "the bound held: \(reports)")
        let decisions = reports["decisions"] as? [[String: Any]] ?? []
        XCTAssertFalse(decisions.contains { ($0["address"] as? String ?? "").hasPrefix("127.1.") }, "no flood pair decided: \(decisions)")
    }
}
