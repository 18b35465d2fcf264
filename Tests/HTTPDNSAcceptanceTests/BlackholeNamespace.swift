import Foundation
import HTTPDNSCore
import HTTPDNSTestSupport
import XCTest

/// A network namespace made by the test, joined to this one by a veth pair, that swallows every TCP
/// packet sent to its addresses (an nftables drop rule inside the namespace): connections to them
/// neither succeed nor fail, as to a blackholed server, until the connect timeout.
///
/// This side of the veth has ``reachableV4`` and ``reachableV6``, local addresses where a test
/// server listens; the namespace side has the blackholed ones. Addresses come from the benchmarking
/// range 198.18.0.0/15 and a ULA prefix, derived from the process id, so they never leave the machine.
/// Needs root, `ip` (iproute2) and `nft` (nftables); fails loudly without them.
final class BlackholeNamespace {
    let name: String
    let reachableV4: HTTPDNSIPAddress
    let blackholeV4: [HTTPDNSIPAddress]
    let reachableV6: HTTPDNSIPAddress
    let blackholeV6: [HTTPDNSIPAddress]
    private let hostLink: String
    private static let counter = HTTPDNSLock(0)

    init() throws {
        let pid = Int(getpid())
        let serial = BlackholeNamespace.counter.withLock { value -> Int in
            value += 1
            return value
        }
        let tag = "\(pid % 100_000)\(serial)"
        name = "httpdns-bh-\(tag)"
        hostLink = "hbh\(tag)"
        let peer = "nbh\(tag)"
        // A /29 per namespace: 198.18.<pid>.<8·serial>.
        let third = pid % 250, fourth = (serial % 30) * 8
        let base = "198.18.\(third)."
        reachableV4 = HTTPDNSIPAddress("\(base)\(fourth + 1)")!
        blackholeV4 = [HTTPDNSIPAddress("\(base)\(fourth + 2)")!, HTTPDNSIPAddress("\(base)\(fourth + 3)")!]
        let prefix = "fd48:6e73:\(String(pid % 65_536, radix: 16)):\(String(serial, radix: 16))::"
        reachableV6 = HTTPDNSIPAddress("\(prefix)1")!
        blackholeV6 = [HTTPDNSIPAddress("\(prefix)2")!, HTTPDNSIPAddress("\(prefix)3")!]

        try Self.run("ip", ["netns", "add", name])
        do {
            try Self.run("ip", ["link", "add", hostLink, "type", "veth", "peer", "name", peer, "netns", name])
            try Self.run("ip", ["addr", "add", "\(reachableV4)/29", "dev", hostLink])
            try Self.run("ip", ["-6", "addr", "add", "\(reachableV6)/64", "dev", hostLink, "nodad"])
            try Self.run("ip", ["link", "set", hostLink, "up"])
            for address in blackholeV4 {
                try Self.run("ip", ["-n", name, "addr", "add", "\(address)/29", "dev", peer])
            }
            for address in blackholeV6 {
                try Self.run("ip", ["-n", name, "-6", "addr", "add", "\(address)/64", "dev", peer, "nodad"])
            }
            try Self.run("ip", ["-n", name, "link", "set", peer, "up"])
            try Self.run("ip", ["-n", name, "link", "set", "lo", "up"])
            // TCP only: ARP and neighbour discovery still answer, so a SYN reaches the namespace and dies there.
            try Self.run("ip", ["netns", "exec", name, "nft", "add", "table", "inet", "blackhole"])
            try Self.run("ip", [
                "netns", "exec", name, "nft", "add", "chain", "inet", "blackhole", "input",
                "{ type filter hook input priority 0 ; policy accept ; }",
            ])
            try Self.run("ip", ["netns", "exec", name, "nft", "add", "rule", "inet", "blackhole", "input", "meta", "l4proto", "tcp", "drop"])
        } catch {
            remove()
            throw error
        }
    }

    /// Deletes the namespace (and with it both ends of the veth pair).
    func remove() {
        _ = try? Self.run("ip", ["netns", "del", name])
        _ = try? Self.run("ip", ["link", "del", hostLink])
    }

    @discardableResult
    private static func run(_ tool: String, _ arguments: [String]) throws -> String {
        let path = ["/usr/sbin/\(tool)", "/sbin/\(tool)", "/usr/bin/\(tool)"].first { FileManager.default.isExecutableFile(atPath: $0) }
        guard let path else { throw ToolRunner.Failure("\(tool) not found: install iproute2 and nftables (scripts/ensure-deps.sh)") }
        let result = try ToolRunner(executable: URL(fileURLWithPath: path)).run(arguments, timeout: .seconds(20))
        guard result.status == 0 else {
            throw ToolRunner.Failure("\(tool) \(arguments.joined(separator: " ")) failed (\(result.status)): \(result.stderrText)")
        }
        return result.stdoutText
    }
}
