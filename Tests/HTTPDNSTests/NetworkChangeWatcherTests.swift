#if canImport(Glibc)
import Glibc
#endif
import Foundation
import HTTPDNSTestSupport
import XCTest

/// The rtnetlink watcher, through an engine that watches by itself, in a namespace the test
/// changes: each burst of address and default-route changes must cost exactly one
/// `networkDidChange()` (seen as one re-run of pre-resolution), and other route churn none.
final class NetworkChangeWatcherTests: XCTestCase {
    /// The engine's debounce in the agent.
    private let debounceMilliseconds = 300
    /// How long "nothing more happens" is watched for after a burst: several debounce intervals.
    private let quiet: Duration = .milliseconds(1_500)

    private func changes(_ agent: RunningTool) -> [String] {
        agent.stdoutText.split(separator: "\n").filter { $0.hasPrefix("change ") }.map(String.init)
    }

    /// Waits for change number `count`, then for a quiet period, and returns every change line.
    private func settle(_ agent: RunningTool, expecting count: Int) throws -> [String] {
        if count > 0 { _ = try agent.waitForLine(startingWith: "change \(count) ", timeout: .seconds(15)) }
        Thread.sleep(forTimeInterval: Double(quiet.components.seconds) + Double(quiet.components.attoseconds) / 1e18)
        return changes(agent)
    }

    func testNetworkChangeWatcherReportsOneChangePerBurst() throws {
        let namespace = try NetworkNamespace()
        try namespace.addLink()
        let agent = try namespace.start(try NetworkNamespace.agent(), ["watch", String(debounceMilliseconds)])
        defer { agent.send(SIGTERM) }
        let ready = try agent.waitForLine(startingWith: "ready", timeout: .seconds(30))
        XCTAssertEqual(ready, "ready family=both", "no route at all: .auto asks for both")
        XCTAssertEqual(try settle(agent, expecting: 0), [], "no change before the test changes anything")

        // Burst 1: the network comes up, IPv4 and IPv6, addresses and default routes.
        try namespace.batch([
            "addr add 10.9.0.2/24 dev v0",
            "route add default via 10.9.0.1",
            "addr add 2001:db8:9::2/64 dev v0 nodad",
            "route add ::/0 via 2001:db8:9::1 dev v0",
        ])
        XCTAssertEqual(try settle(agent, expecting: 1), ["change 1 family=both"])

        // Burst 2: IPv6 goes away; .auto is then IPv4 only.
        try namespace.batch(["route del ::/0 via 2001:db8:9::1 dev v0", "addr del 2001:db8:9::2/64 dev v0"])
        XCTAssertEqual(try settle(agent, expecting: 2), ["change 1 family=both", "change 2 family=ipv4"])

        // A route that is not a default route, on an address that stays: no change.
        try namespace.batch(["route add 192.0.2.0/24 via 10.9.0.1", "route del 192.0.2.0/24 via 10.9.0.1"])
        XCTAssertEqual(try settle(agent, expecting: 0).count, 2, "non-default routes are not network changes")

        // Burst 3: the default route alone goes (the address stays): a change.
        try namespace.ip("route", "del", "default", "via", "10.9.0.1")
        XCTAssertEqual(try settle(agent, expecting: 3).last, "change 3 family=both")

        // Burst 4: the address alone goes.
        try namespace.ip("addr", "del", "10.9.0.2/24", "dev", "v0")
        XCTAssertEqual(try settle(agent, expecting: 4).count, 4)
        XCTAssertTrue(agent.isRunning)
    }

    /// Five address changes 100 ms apart (a DHCP lease, then SLAAC, then a VPN…): without the
    /// debounce each one would be a change (checked by hand with a 0 ms debounce: five changes).
    func testNetworkChangeWatcherDebouncesABurstSpreadOverTime() throws {
        let namespace = try NetworkNamespace()
        try namespace.addLink()
        let agent = try namespace.start(try NetworkNamespace.agent(), ["watch", "1000"])
        defer { agent.send(SIGTERM) }
        _ = try agent.waitForLine(startingWith: "ready", timeout: .seconds(30))
        try namespace.shell("for i in 1 2 3 4 5; do ip addr add 10.8.0.$i/32 dev v0; sleep 0.1; done")
        _ = try agent.waitForLine(startingWith: "change 1 ", timeout: .seconds(15))
        Thread.sleep(forTimeInterval: 3)
        XCTAssertEqual(changes(agent), ["change 1 family=both"])
    }
}

extension RunningTool {
    var stdoutText: String { String(decoding: stdout, as: UTF8.self) }
}
