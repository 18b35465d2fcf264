import Foundation
import HTTPDNSCore
import HTTPDNSTestSupport
import XCTest

/// Issue 23's link-up acceptance, in network namespaces of the test's own (``CarrierNetworks``): the
/// core runs the HTTPDNS service (the engine's provider, and the DoH upstream at its /dns-query);
/// `httpdns stub` runs in a client namespace with `--cache-dir`. Warmed, stopped (SIGTERM saves
/// both caches), started again with the namespace's link down, the stub answers every cached name
/// for 30 s without one SERVFAIL — through a network change while the link is still down (an
/// address added: the engine expires its answers, the upstreams' down state is reset, and
/// nothing upstream can answer). Once the link is up and the default route is back (as a DHCP
/// client puts it back), names it never saw resolve within seconds. Then the client moves to
/// another address while the connections to the provider and the DoH upstream are open: once the
/// stub has seen the change, new names resolve at once on new connections (the old ones, from an
/// address that is gone, would hold each first query for the whole 2 s timeout: SERVFAIL).
final class StubNetworkChangeTests: XCTestCase {
    static let real = "198.19.0.10"
    /// A of these go through the engine (`--protect '*.safe.test'`), with `--httpdns-only`: no
    /// upstream covers for the engine.
    static let protected = (0..<20).map { "p\($0).safe.test" }
    /// A of these go to the DoH upstream; the odd ones have a 2 s TTL, so they expire while the
    /// link is down and are answered stale (RFC 8767).
    static let unprotected = (0..<20).map { "u\($0).other.test" }
    /// Asked only once the link is back.
    static let late = ["late.safe.test", "late.other.test"]
    /// Asked only once the client has moved to another address.
    static let moved = ["moved.safe.test", "moved.other.test"]
    /// The issue's 30 s of link down, spent querying every cached name each 100 ms (about 12,000
    /// queries): the acceptance itself, not a wait.
    static let linkDownSeconds = 30.0

    private var networks: CarrierNetworks!
    private var directory: URL!
    private var tool: String!
    private var client: CarrierNetworks.Client { networks.clients[1]! }

    override func setUpWithError() throws {
        tool = try ToolRunner.locate().path
        networks = try CarrierNetworks(networks: [1])
        do {
            directory = FileManager.default.temporaryDirectory.appendingPathComponent("httpdns-stubnet-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            try startService()
            try write(Self.queryScript, "query.py")
        } catch {
            tearDown()
            throw error
        }
    }

    override func tearDown() {
        networks?.remove()
        if let directory { try? FileManager.default.removeItem(at: directory) }
    }

    func testCachedNamesAnswerWhileTheLinkIsDownAndNewNamesResolveOnceItIsUp() throws {
        let cached = Self.protected + Self.unprotected
        let arguments = [
            "stub", "--provider", "dnspod=http://\(networks.serverAddress)", "--allow-private", "--httpdns-only",
            "--protect", "*.safe.test", "--upstream", "doh=http://\(networks.serverAddress)/dns-query",
            "--cache-dir", file("state"), "--timeout", "2",
        ]

        // Warm: every name answered once on the working network, then SIGTERM saves the caches.
        let first = try startStub(arguments)
        let warm = try query(["once", "5"] + cached)
        XCTAssertEqual(warm["ok"] as? Int, cached.count, "warmed: \(warm)")
        first.send(SIGTERM)
        XCTAssertEqual(try first.wait(timeout: .seconds(20)), 0)
        XCTAssertEqual(first.sanitizerReports, [])

        // The link goes down; the stub starts again behind it.
        try ip(["-n", client.namespace, "link", "set", "eth0", "down"])
        let stub = try startStub(arguments)
        let loop = try networks.start(
            in: client.namespace, "/usr/bin/python3", [file("query.py"), "loop", "\(Self.linkDownSeconds)"] + cached)
        // A third of the way in, a network change while the link is still down (an address
        // comes): everything is reset while nothing upstream can answer.
        usleep(UInt32(Self.linkDownSeconds / 3 * 1e6))
        try ip(["-n", client.namespace, "addr", "add", "198.18.1.3/24", "dev", "eth0"])
        try waitFor("the stub to see the network change", within: .seconds(10)) { self.networkChanges(stub) >= 1 }
        let loopOutput = { "\(String(decoding: loop.stdout, as: UTF8.self)) \(String(decoding: loop.stderr, as: UTF8.self))" }
        XCTAssertEqual(try loop.wait(timeout: .seconds(Int64(Self.linkDownSeconds) + 30)), 0, loopOutput())
        let down = try XCTUnwrap(try? JSONSerialization.jsonObject(with: loop.stdout) as? [String: Any], loopOutput())
        XCTAssertEqual(down["servfail"] as? Int, 0, "no SERVFAIL for a cached name while the link is down: \(down)")
        XCTAssertEqual(down["timeout"] as? Int, 0, "every query answered: \(down)")
        XCTAssertEqual(down["wrong"] as? Int, 0, "every answer true: \(down)")
        XCTAssertGreaterThan(down["rounds"] as? Int ?? 0, Int(Self.linkDownSeconds) * 2, "queried all along: \(down)")
        XCTAssertGreaterThan(down["stale"] as? Int ?? 0, 0, "the expired ones answered stale (EDE 3): \(down)")

        // The link comes back, and the default route with it: new names resolve within seconds.
        let changes = networkChanges(stub)
        try ip(["-n", client.namespace, "link", "set", "eth0", "up"])
        try ip(["-n", client.namespace, "route", "replace", "default", "via", "198.18.1.1"])
        let up = try query(["until", "10"] + Self.late)
        XCTAssertEqual(up["ok"] as? Int, Self.late.count, "new names resolve once the link is up: \(up)")
        XCTAssertLessThan(up["seconds"] as? Double ?? 99, 5, "within seconds of the link coming up: \(up)")
        try waitFor("the stub to see the link come up", within: .seconds(10)) { self.networkChanges(stub) > changes }
        let after = try query(["once", "5"] + cached)
        XCTAssertEqual(after["ok"] as? Int, cached.count, "and every cached name still answers: \(after)")

        // Another network while connections are open: the address the upstreams' connections came
        // from is gone. Once the stub has seen the change, new names resolve at once, on new
        // connections, not after the old ones' timeout.
        let moved = networkChanges(stub)
        try ip(["-n", client.namespace, "addr", "flush", "dev", "eth0"])
        try ip(["-n", client.namespace, "addr", "add", "198.18.1.7/24", "dev", "eth0"])
        try ip(["-n", client.namespace, "route", "replace", "default", "via", "198.18.1.1"])
        try waitFor("the stub to see the new address", within: .seconds(10)) { self.networkChanges(stub) > moved }
        let elsewhere = try query(["until", "10"] + Self.moved)
        XCTAssertEqual(elsewhere["ok"] as? Int, Self.moved.count, "new names resolve on the new network: \(elsewhere)")
        XCTAssertLessThan(elsewhere["seconds"] as? Double ?? 99, 1, "on new connections, not after the old ones' timeout: \(elsewhere)")

        stub.send(SIGTERM)
        XCTAssertEqual(try stub.wait(timeout: .seconds(20)), 0)
        XCTAssertEqual(stub.sanitizerReports, [])
    }

    // MARK: - The stub and its clients

    private func startStub(_ arguments: [String]) throws -> RunningTool {
        let stub = try networks.start(in: client.namespace, tool, arguments)
        XCTAssertEqual(try stub.waitForLine(startingWith: "listening on ", timeout: .seconds(20)),
                       "listening on udp://127.0.0.153:53 tcp://127.0.0.153:53")
        return stub
    }

    /// The stub's "network changed" lines on stderr so far.
    private func networkChanges(_ stub: RunningTool) -> Int {
        String(decoding: stub.stderr, as: UTF8.self).components(separatedBy: "httpdns stub: network changed").count - 1
    }

    /// Runs query.py in the client namespace; its JSON summary.
    private func query(_ arguments: [String]) throws -> [String: Any] {
        let result = try networks.run(in: client.namespace, "/usr/bin/python3", [file("query.py")] + arguments, timeout: .seconds(60))
        guard result.status == 0, let summary = try? JSONSerialization.jsonObject(with: Data(result.stdoutText.utf8)) as? [String: Any] else {
            throw ToolRunner.Failure("query.py \(arguments.prefix(2)): \(result.status) \(result.stdoutText) \(result.stderrText)")
        }
        return summary
    }

    /// dnspython against the stub, A of each name, true when the one address is ``real``:
    /// `once SECONDS NAMES…` asks each name once (a 2.5 s timeout: longer than the stub's RFC 8767
    /// client response timer of 1.8 s); `until SECONDS NAMES…` asks until every name has answered
    /// truly, within SECONDS; `loop SECONDS NAMES…` asks every name each 100 ms for SECONDS.
    /// Prints counts by outcome, rounds, answers with an Extended DNS Error (stale), latencies.
    static let queryScript = """
        import json, sys, time
        import dns.exception, dns.message, dns.query, dns.rcode
        mode, seconds, names = sys.argv[1], float(sys.argv[2]), sys.argv[3:]
        counts = {"ok": 0, "servfail": 0, "wrong": 0, "timeout": 0, "stale": 0, "rounds": 0}
        failures, latencies = [], []
        def ask(name):
            query = dns.message.make_query(name, "A", use_edns=0)
            began = time.monotonic()
            try:
                reply = dns.query.udp(query, "127.0.0.153", timeout=2.5)
            except dns.exception.Timeout:
                counts["timeout"] += 1
                failures.append(name + " timeout")
                return False
            latencies.append(time.monotonic() - began)
            if any(option.otype == 15 for option in reply.options):
                counts["stale"] += 1
            if reply.rcode() == dns.rcode.SERVFAIL:
                counts["servfail"] += 1
                failures.append(name + " SERVFAIL")
                return False
            addresses = sorted(item.address for rrset in reply.answer if rrset.rdtype == 1 for item in rrset)
            if addresses != ["\(real)"]:
                counts["wrong"] += 1
                failures.append(name + " " + dns.rcode.to_text(reply.rcode()) + " " + str(addresses))
                return False
            counts["ok"] += 1
            return True
        began = time.monotonic()
        if mode == "once":
            for name in names:
                ask(name)
        elif mode == "until":
            waiting = list(names)
            while waiting and time.monotonic() - began < seconds:
                waiting = [name for name in waiting if not ask(name)]
                if waiting:
                    time.sleep(0.1)
            counts["ok"] = len(names) - len(waiting)
        else:
            while time.monotonic() - began < seconds:
                start = time.monotonic()
                for name in names:
                    ask(name)
                counts["rounds"] += 1
                time.sleep(max(0, 0.1 - (time.monotonic() - start)))
        latencies.sort()
        counts["seconds"] = time.monotonic() - began
        counts["p50"] = latencies[len(latencies) // 2] if latencies else None
        counts["max"] = latencies[-1] if latencies else None
        counts["failures"] = failures[:20]
        print(json.dumps(counts))
        """

    // MARK: - The core

    private func startService() throws {
        var entries = Self.protected.map { "\"\($0)\": {\"A\": [\"\(Self.real)\"], \"ttl\": 300}" }
        entries += Self.unprotected.enumerated().map { index, name in
            "\"\(name)\": {\"A\": [\"\(Self.real)\"], \"ttl\": \(index.isMultiple(of: 2) ? 300 : 2)}"
        }
        entries += (Self.late + Self.moved).map { "\"\($0)\": {\"A\": [\"\(Self.real)\"], \"ttl\": 300}" }
        try write("{\(entries.joined(separator: ", "))}", "zone.json")
        let server = try networks.start(in: networks.core, tool, ["serve", "--listen", "\(networks.serverAddress):80", "--zone", file("zone.json")])
        _ = try server.waitForLine(startingWith: "listening on ", timeout: .seconds(20))
    }

    // MARK: - Helpers

    private func ip(_ arguments: [String]) throws {
        let result = try ToolRunner(executable: URL(fileURLWithPath: "/usr/sbin/ip")).run(arguments, timeout: .seconds(20))
        guard result.status == 0 else { throw ToolRunner.Failure("ip \(arguments.joined(separator: " ")): \(result.stderrText)") }
    }

    private func waitFor(_ what: String, within limit: Duration, _ condition: () throws -> Bool) throws {
        let deadline = ContinuousClock.now + limit
        while try !condition() {
            guard ContinuousClock.now < deadline else { throw ToolRunner.Failure("\(what): not within \(limit)") }
            usleep(50_000)
        }
    }

    private func write(_ text: String, _ name: String) throws {
        try text.write(to: directory.appendingPathComponent(name), atomically: true, encoding: .utf8)
    }

    private func file(_ name: String) -> String {
        directory.appendingPathComponent(name).path
    }
}
