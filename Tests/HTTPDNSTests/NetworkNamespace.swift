#if canImport(Glibc)
import Glibc
#endif
import Foundation
import HTTPDNSCore
import HTTPDNSTestSupport
import XCTest

/// A network namespace a test creates for itself (`ip netns add`), deleted when released.
///
/// It starts with only a loopback interface and no route anywhere: whatever the test adds (veth
/// pairs with both ends inside, addresses, routes) stays inside, so nothing can reach another
/// machine. IPv6 addresses are added without duplicate address detection and no link-local
/// addresses are generated, so that the kernel adds no address events of its own later on.
/// Needs root (CAP_SYS_ADMIN), as the CI machine has; without it creation fails loudly.
final class NetworkNamespace {
    let name: String
    private static let counter = HTTPDNSLock(0)
    // ToolRunner(executable:) throws only when it has to search; with a path it cannot.
    private static let ip = try! ToolRunner(executable: URL(fileURLWithPath: "/usr/sbin/ip"))

    init() throws {
        let serial = NetworkNamespace.counter.withLock { count in
            count += 1
            return count
        }
        name = "httpdns-\(getpid())-\(serial)"
        try NetworkNamespace.run(["netns", "add", name])
        try shell("echo 1 > /proc/sys/net/ipv6/conf/default/addr_gen_mode; echo 1 > /proc/sys/net/ipv6/conf/all/addr_gen_mode")
        try ip("link", "set", "lo", "up")
    }

    deinit {
        _ = try? NetworkNamespace.ip.run(["netns", "del", name], timeout: .seconds(10))
    }

    /// `ip -n NAME arguments…`; throws with ip's message when it fails.
    func ip(_ arguments: String...) throws {
        try NetworkNamespace.run(["-n", name] + arguments)
    }

    /// Runs several `ip` commands (without the `ip`) from one process (`ip -batch`), so that they
    /// land within a millisecond or so even on a loaded machine: one burst of events.
    func batch(_ commands: [String]) throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("httpdns-batch-\(UUID().uuidString)")
        try (commands.joined(separator: "\n") + "\n").write(to: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: file) }
        try NetworkNamespace.run(["-n", name, "-batch", file.path])
    }

    /// Runs `/bin/sh -c script` inside the namespace.
    func shell(_ script: String) throws {
        try NetworkNamespace.run(["netns", "exec", name, "/bin/sh", "-c", script])
    }

    /// Runs `executable` inside the namespace and waits for it.
    func run(_ executable: String, _ arguments: [String], timeout: Duration = .seconds(60)) throws -> ToolRunner.Result {
        try NetworkNamespace.ip.run(["netns", "exec", name, executable] + arguments, timeout: timeout)
    }

    /// Starts `executable` inside the namespace (`ip netns exec` execs it: the process is ours).
    func start(_ executable: String, _ arguments: [String]) throws -> RunningTool {
        try NetworkNamespace.ip.start(["netns", "exec", name, executable] + arguments)
    }

    /// A veth pair with both ends in the namespace, up: `first` gets the addresses and routes.
    func addLink(_ first: String = "v0", peer: String = "v1") throws {
        try ip("link", "add", first, "type", "veth", "peer", "name", peer)
        try ip("link", "set", first, "up")
        try ip("link", "set", peer, "up")
    }

    private static func run(_ arguments: [String]) throws {
        let result = try ip.run(arguments, timeout: .seconds(20))
        guard result.status == 0 else {
            throw ToolRunner.Failure("ip \(arguments.joined(separator: " ")) failed (\(result.status)): \(result.stderrText)")
        }
    }

    /// The test-support agent (`HTTPDNSNetnsAgent`), built next to the test runner.
    static func agent() throws -> String {
        let runner = URL(fileURLWithPath: CommandLine.arguments.first ?? "").deletingLastPathComponent()
        var candidates = [runner.appendingPathComponent("HTTPDNSNetnsAgent")]
        for bundle in [Bundle.main] + Bundle.allBundles {
            candidates.append(bundle.bundleURL.deletingLastPathComponent().appendingPathComponent("HTTPDNSNetnsAgent"))
        }
        guard let found = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0.path) }) else {
            throw ToolRunner.Failure("HTTPDNSNetnsAgent not built (swift build builds it); looked at "
                + candidates.map(\.path).joined(separator: ", "))
        }
        return found.path
    }
}
