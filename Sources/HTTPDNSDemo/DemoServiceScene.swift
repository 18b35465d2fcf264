import Foundation
import HTTPDNSCore
import HTTPDNSServer
import HTTPDNSTestSupport
import HTTPServing

/// The service side (issue 22): `httpdns serve` (the binary next to this one) answering two client
/// networks differently, taking a stopped origin out of its answers, and moving one network's view
/// away from an address that network's apps report as failing (seed 002's loop).
///
/// The two networks are loopback source ranges: curl binds `127.10.x.1` (carrier A) or `127.20.x.1`
/// (carrier B) with `--interface`, so the server sees each request from that network's address.
enum DemoServiceScene {
    static let origins = ["127.0.0.41", "127.0.0.43", "127.0.0.44", "127.0.0.42"].map { HTTPDNSIPAddress($0)! }
    static let name = "app.demo.test"
    static let reportToken = "demo-report-token"
    static let adminToken = "demo-admin-token"

    static func run(cleanup: DemoCleanup) {
        let tool = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
            .deletingLastPathComponent().appendingPathComponent("httpdns")
        let curl = URL(fileURLWithPath: "/usr/bin/curl")
        guard FileManager.default.isExecutableFile(atPath: tool.path), FileManager.default.isExecutableFile(atPath: curl.path) else {
            DemoOutput.line("(service scene skipped: needs the httpdns binary next to httpdns-demo and curl)\n")
            return
        }
        do {
            try play(tool: tool, curl: ToolRunner(executable: curl), cleanup: cleanup)
        } catch {
            DemoOutput.error("service scene: \(error)")
        }
    }

    private static func play(tool: URL, curl: ToolRunner, cleanup: DemoCleanup) throws {
        // Origins: one small HTTP server per address, all on one port, so a TCP check can see each.
        let first = try HTTPServer(configuration: .init(address: origins[0], port: 0)) { _ in .text("origin\n") }
        let port = first.port
        var servers = [first]
        for address in origins.dropFirst() {
            servers.append(try HTTPServer(configuration: .init(address: address, port: port)) { _ in .text("origin\n") })
        }
        let running = HTTPDNSLock(servers)
        cleanup.add { running.withLock { $0.forEach { $0.stop() } } }

        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("httpdns-demo-serve-\(getpid())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        cleanup.add { try? FileManager.default.removeItem(at: directory) }
        let a = origins.map(\.description)
        let check = #""check": {"type": "tcp", "port": \#(port), "interval": 0.3, "timeout": 0.2, "fall": 2, "rise": 2, "jitter": 0}"#
        let zone = """
            {"\(name)": {"A": ["\(a[0])", "\(a[1])", "\(a[2])"], "ttl": 30, \(check),
              "views": {"carrier-a": {"A": ["\(a[0])", "\(a[1])", "\(a[2])"]},
                        "carrier-b": {"A": ["\(a[0])", "\(a[3])", "\(a[1])", "\(a[2])"]}}}}
            """
        try zone.write(to: directory.appendingPathComponent("zone.json"), atomically: true, encoding: .utf8)
        try "# carrier A's published ranges\n127.10.0.0/16\n".write(
            to: directory.appendingPathComponent("carrier-a.txt"), atomically: true, encoding: .utf8)
        try "# carrier B\n127.20.0.0/16\n".write(to: directory.appendingPathComponent("carrier-b.txt"), atomically: true, encoding: .utf8)
        try #"{"views": [{"name": "carrier-a", "lists": ["carrier-a.txt"]}, {"name": "carrier-b", "lists": ["carrier-b.txt"]}]}"#
            .write(to: directory.appendingPathComponent("views.json"), atomically: true, encoding: .utf8)

        let serve = try RunningTool(executable: tool, arguments: [
            "serve", "--listen", "127.0.0.1:0", "--zone", directory.appendingPathComponent("zone.json").path,
            "--views", directory.appendingPathComponent("views.json").path, "--report-token", reportToken,
            "--report-threshold", "3", "--admin-token", adminToken,
        ])
        cleanup.add { serve.send(SIGTERM) }
        let line = try serve.waitForLine(startingWith: "listening on ", timeout: .seconds(10))
        let base = String(line.dropFirst("listening on ".count))
        DemoOutput.line("""
            The service side: httpdns serve answers by client network, checks its origins, and listens to the apps
              $ httpdns serve --zone zone.json --views views.json --report-token … --admin-token …
              zone.json: \(name) → carrier-a \(a[0]), \(a[1]), \(a[2]); carrier-b \(a[0]), \(a[3]), \(a[1]), \(a[2]); a TCP check every 0.3 s
              views.json: carrier-a = 127.10.0.0/16, carrier-b = 127.20.0.0/16 (carrier-a.txt, carrier-b.txt)
            """)

        func ask(from source: String) -> String {
            let result = try? curl.run(["-sS", "--max-time", "5", "--interface", source, "\(base)/d?dn=\(name)&ttl=1"], timeout: .seconds(10))
            return (result?.stdoutText ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
        }
        func show(_ title: String) {
            DemoOutput.line("  \(title)")
            DemoOutput.line("    from carrier A (127.10.1.1): \(ask(from: "127.10.1.1"))")
            DemoOutput.line("    from carrier B (127.20.1.1): \(ask(from: "127.20.1.1"))")
        }
        show("1. the same question, two networks (DNSPod format: addresses,ttl):")

        DemoOutput.line("  2. origin \(a[1]) stops; its check fails twice in a row (0.3 s apart) and it leaves every answer:")
        running.withLock { $0[1].stop() }
        waitUntil(seconds: 5) { !ask(from: "127.20.1.1").contains(a[1]) }
        show("   after the check:")

        DemoOutput.line("""
              3. carrier A blocks \(a[0]); its apps fail to connect and report it (POST /report, three of carrier A's /24s):
            """)
        let body = #"{"reports":[{"host":"\#(name)","address":"\#(a[0])","port":\#(port),"error":"connect-timeout","time":\#(Int(Date().timeIntervalSince1970))}]}"#
        for source in ["127.10.1.1", "127.10.2.1", "127.10.3.1"] {
            let result = try? curl.run([
                "-sS", "--max-time", "5", "--interface", source, "-H", "Authorization: Bearer \(reportToken)",
                "-H", "Content-Type: application/json", "--data-binary", body, "-w", " %{http_code}", "\(base)/report",
            ], timeout: .seconds(10))
            DemoOutput.line("    from \(source): \((result?.stdoutText ?? "").trimmingCharacters(in: .whitespacesAndNewlines))")
        }
        DemoOutput.line("    the server probes \(a[0]) itself: it answers, so only carrier A's view moves away from it")
        waitUntil(seconds: 5) { ask(from: "127.10.1.1").hasPrefix(a[2]) }
        show("   after the reports:")
        if let status = try? curl.run(["-sS", "--max-time", "5", "-H", "Authorization: Bearer \(adminToken)", "\(base)/status"]),
           let decisions = summary(of: status.stdoutText)
        {
            DemoOutput.line("    GET /status (admin token), report decisions: \(decisions)")
        }
        serve.send(SIGTERM)
        _ = try? serve.wait(timeout: .seconds(10))
        running.withLock { $0.forEach { $0.stop() } }
        DemoOutput.line("""
              => one server, answers chosen per client network; a dead origin left the answers by itself; \
            apps' reports moved carrier A away from the address its network blocks, while carrier B still leads with it.

            """)
    }

    /// Polls `condition` every 100 ms until it holds or `seconds` pass.
    private static func waitUntil(seconds: Double, _ condition: () -> Bool) {
        let deadline = Date().addingTimeInterval(seconds)
        while !condition(), Date() < deadline { usleep(100_000) }
    }

    /// The status endpoint's report decisions, one phrase each.
    private static func summary(of json: String) -> String? {
        guard let document = try? JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any],
              let reports = document["reports"] as? [String: Any], let decisions = reports["decisions"] as? [[String: Any]]
        else { return nil }
        let phrases = decisions.map { decision in
            let kind = decision["decision"] as? String ?? "?"
            let address = decision["address"] as? String ?? "?"
            let view = (decision["view"] as? String).map { " in \($0)" } ?? " for all"
            return "\(kind) \(address)\(view) (\(decision["networks"] as? Int ?? 0) networks reported it)"
        }
        return phrases.isEmpty ? "no decision" : phrases.joined(separator: "; ")
    }
}
