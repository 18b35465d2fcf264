#if canImport(Glibc)
import Glibc
#endif
import Foundation
import HTTPDNSCore
import HTTPDNSTestSupport
import XCTest

/// `httpdns serve --views`: answers by client network from the built binary, and SIGHUP swapping
/// the zone, the views, their lists and MaxMind DB together or not at all.
final class ServeViewsCommandTests: ToolTestCase {
    private func curl(_ arguments: [String]) throws -> String {
        let curl = try RunningTool(
            executable: URL(fileURLWithPath: "/usr/bin/curl"), arguments: ["-sS", "--max-time", "10", "--noproxy", "*"] + arguments)
        _ = try curl.wait(timeout: .seconds(30))
        return String(decoding: curl.stdout, as: UTF8.self)
    }

    private func waitUntil(_ condition: () throws -> Bool) throws {
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline {
            if try condition() { return }
            usleep(50_000)
        }
        XCTFail("condition not met within 20 s")
    }

    func testViewsFileListsAndMaxMindDBAnswerByClientAndReloadAllOrNothing() throws {
        let directory = try temporaryDirectory()
        func write(_ name: String, _ text: String) throws {
            try Data(text.utf8).write(to: directory.appendingPathComponent(name))
        }
        var country = MMDBWriter()
        country.insert("1.0.0.0/8", MMDBWriter.country("CN"))
        try country.write(to: directory.appendingPathComponent("country.mmdb").path)
        var asn = MMDBWriter()
        asn.insert("5.5.0.0/16", MMDBWriter.asn(4134))
        try asn.write(to: directory.appendingPathComponent("asn.mmdb").path)
        try write("carrier-a.txt", "# carrier A\n10.1.0.0/16\n")
        try write("views.json", """
            {"geoip": ["country.mmdb", "asn.mmdb"],
             "views": [{"name": "carrier-a", "lists": ["carrier-a.txt"], "networks": ["10.2.0.0/16"]},
                       {"name": "china", "countries": ["CN"]}, {"name": "chinanet", "asns": [4134]}]}
            """)
        try write("zone.json", """
            {"www.example.test": {"A": ["192.0.2.1"], "ttl": 60, "views": {"carrier-a": {"A": ["198.51.100.1"]},
             "china": {"A": ["198.51.100.2"]}, "chinanet": {"A": ["198.51.100.3"]}}}}
            """)
        let views = directory.appendingPathComponent("views.json").path
        let server = try runner.start([
            "serve", "--listen", "127.0.0.1:0", "--zone", directory.appendingPathComponent("zone.json").path, "--views", views,
        ])
        defer { assertStopsCleanly(server) }
        let url = String(try server.waitForLine(startingWith: "listening on ").dropFirst("listening on ".count))
        func ask(_ client: String) throws -> String { try curl(["\(url)/d?dn=www.example.test&ip=\(client)"]) }
        XCTAssertEqual(try ask("10.1.0.9"), "198.51.100.1")
        XCTAssertEqual(try ask("10.2.0.9"), "198.51.100.1")
        XCTAssertEqual(try ask("1.2.3.4"), "198.51.100.2")
        XCTAssertEqual(try ask("5.5.5.5"), "198.51.100.3")
        XCTAssertEqual(try ask("8.8.8.8"), "192.0.2.1")
        XCTAssertEqual(try curl(["\(url)/d?dn=www.example.test&ip=nonsense"]), "ip is not an IP address\n")

        // A bad list line: refused with file and line, everything old kept.
        try write("carrier-a.txt", "10.1.0.0/16\n10.3.0.1/16\n")
        try write("zone.json", #"{"www.example.test": {"A": ["192.0.2.5"]}}"#)
        server.send(SIGHUP)
        try waitUntil { String(decoding: server.stderr, as: UTF8.self).contains("keeping the old zone and views") }
        XCTAssertTrue(String(decoding: server.stderr, as: UTF8.self).contains("carrier-a.txt:2: address has bits set past /16"),
                      String(decoding: server.stderr, as: UTF8.self))
        XCTAssertEqual(try ask("10.1.0.9"), "198.51.100.1")
        XCTAssertEqual(try ask("8.8.8.8"), "192.0.2.1", "the new zone did not go in without its views")

        // A broken MaxMind DB: refused naming the file.
        try write("carrier-a.txt", "10.3.0.0/16\n")
        try Data("garbage".utf8).write(to: directory.appendingPathComponent("asn.mmdb"))
        server.send(SIGHUP)
        try waitUntil { String(decoding: server.stderr, as: UTF8.self).contains("asn.mmdb: not a readable MaxMind DB") }
        XCTAssertEqual(try ask("10.1.0.9"), "198.51.100.1")
        XCTAssertEqual(try ask("5.5.5.5"), "198.51.100.3")

        // All good again: zone, lists and databases change together.
        try asn.write(to: directory.appendingPathComponent("asn.mmdb").path)
        server.send(SIGHUP)
        try waitUntil { try ask("10.3.0.9") == "192.0.2.5" || ask("8.8.8.8") == "192.0.2.5" }
        XCTAssertEqual(try ask("10.1.0.9"), "192.0.2.5")
        XCTAssertTrue(String(decoding: server.stderr, as: UTF8.self).contains("reloaded zone"))
        XCTAssertTrue(server.isRunning)
    }

    func testAZoneNamingAnUndefinedViewIsRefusedAtStart() throws {
        let directory = try temporaryDirectory()
        let zone = directory.appendingPathComponent("zone.json")
        try Data(#"{"www.example.test": {"A": ["192.0.2.1"], "views": {"nowhere": {"A": ["192.0.2.2"]}}}}"#.utf8).write(to: zone)
        let result = try run(["serve", "--listen", "127.0.0.1:0", "--zone", zone.path])
        XCTAssertEqual(result.status, 1)
        XCTAssertTrue(result.stderrText.contains("view \"nowhere\" is not defined (no views are configured)"), result.stderrText)
    }
}
