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
    private let debounceMilliseconds = 200
    /// How long "nothing more happens" is watched for after a burst: several debounce intervals.
    private let quiet: Duration = .milliseconds(1_200)

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
        try namespace.ip("addr", "add", "10.9.0.2/24", "dev", "v0")
        try namespace.ip("route", "add", "default", "via", "10.9.0.1")
        try namespace.ip("addr", "add", "2001:db8:9::2/64", "dev", "v0", "nodad")
        try namespace.ip("-6", "route", "add", "default", "via", "2001:db8:9::1", "dev", "v0")
        XCTAssertEqual(try settle(agent, expecting: 1), ["change 1 family=both"])

        // Burst 2: IPv6 goes away; .auto is then IPv4 only.
        try namespace.ip("-6", "route", "del", "default", "via", "2001:db8:9::1", "dev", "v0")
        try namespace.ip("addr", "del", "2001:db8:9::2/64", "dev", "v0")
        XCTAssertEqual(try settle(agent, expecting: 2), ["change 1 family=both", "change 2 family=ipv4"])

        // A route that is not a default route, on an address that stays: no change.
        try namespace.ip("route", "add", "192.0.2.0/24", "via", "10.9.0.1")
        try namespace.ip("route", "del", "192.0.2.0/24", "via", "10.9.0.1")
        XCTAssertEqual(try settle(agent, expecting: 0).count, 2, "non-default routes are not network changes")

        // Burst 3: the default route alone goes (the address stays): a change.
        try namespace.ip("route", "del", "default", "via", "10.9.0.1")
        XCTAssertEqual(try settle(agent, expecting: 3).last, "change 3 family=both")

        // Burst 4: the address alone goes.
        try namespace.ip("addr", "del", "10.9.0.2/24", "dev", "v0")
        XCTAssertEqual(try settle(agent, expecting: 4).count, 4)
        XCTAssertTrue(agent.isRunning)
    }

    func testNetworkChangeWatcherDebouncesARapidBurstIntoOne() throws {
        let namespace = try NetworkNamespace()
        try namespace.addLink()
        let agent = try namespace.start(try NetworkNamespace.agent(), ["watch", String(debounceMilliseconds)])
        defer { agent.send(SIGTERM) }
        _ = try agent.waitForLine(startingWith: "ready", timeout: .seconds(30))
        // Twenty address changes in one shell, far faster than the debounce.
        let script = (1...10).map { "ip addr add 10.8.0.\($0)/32 dev v0; ip addr del 10.8.0.\($0)/32 dev v0" }.joined(separator: "; ")
        try namespace.shell(script)
        XCTAssertEqual(try settle(agent, expecting: 1), ["change 1 family=both"])
    }
}

extension RunningTool {
    var stdoutText: String { String(decoding: stdout, as: UTF8.self) }
}
