#if canImport(Glibc)
import Glibc
#endif
import Foundation
import HTTPDNSCore
import HTTPDNSTestSupport
import XCTest

/// Client networks of the test's own, as two carriers' subscribers see an HTTPDNS service: a core
/// network namespace where the servers run, and one namespace per client /24, joined to the core
/// by a veth pair each, whose processes (`ip netns exec`) connect from that /24 as an app on that
/// network would. Nothing is added to the test process's own namespace.
///
/// Addresses come from the benchmarking range 198.18.0.0/15 and exist only inside these namespaces:
/// client network `n` is 198.18.n.0/24 (the client 198.18.n.2, its gateway on the core side
/// 198.18.n.1); the core's own addresses (``serverAddress``, ``origins``) sit on its loopback.
/// A client namespace's only route is its default route to the core, so no packet can leave.
/// Needs root, `ip` (iproute2) and `nft` (nftables); fails loudly without them.
final class CarrierNetworks {
    /// One client network: a namespace and the address its processes connect from.
    struct Client: CustomStringConvertible {
        let namespace: String
        let address: String
        var description: String { address }
    }

    /// Where `httpdns serve` listens.
    let serverAddress = "198.19.0.1"
    /// Where the origins listen.
    let origins = ["198.19.0.10", "198.19.0.11", "198.19.0.12"]
    /// The namespace of the servers.
    let core: String
    /// Client networks by the /24's third byte.
    private(set) var clients: [Int: Client] = [:]
    private var namespaces: [String] = []
    private var processes: [RunningTool] = []
    private static let counter = HTTPDNSLock(0)
    private static let ip = URL(fileURLWithPath: "/usr/sbin/ip")
    private static let nft = "/usr/sbin/nft"

    /// Makes the core and one client namespace per entry of `networks` (198.18.n.0/24 each).
    init(networks: [Int]) throws {
        for tool in [Self.ip.path, Self.nft] where !FileManager.default.isExecutableFile(atPath: tool) {
            throw ToolRunner.Failure("\(tool) not found: install iproute2 and nftables (scripts/ensure-deps.sh)")
        }
        let serial = Self.counter.withLock { value -> Int in
            value += 1
            return value
        }
        let prefix = "httpdns-loop-\(getpid())-\(serial)"
        core = "\(prefix)-core"
        do {
            try addNamespace(core)
            try ip(["-n", core, "link", "set", "lo", "up"])
            for address in [serverAddress] + origins {
                try ip(["-n", core, "addr", "add", "\(address)/32", "dev", "lo"])
            }
            for network in networks {
                let client = Client(namespace: "\(prefix)-n\(network)", address: "198.18.\(network).2")
                let link = "n\(network)"
                try addNamespace(client.namespace)
                try ip(["-n", core, "link", "add", link, "type", "veth", "peer", "name", "eth0", "netns", client.namespace])
                try ip(["-n", core, "addr", "add", "198.18.\(network).1/24", "dev", link])
                try ip(["-n", core, "link", "set", link, "up"])
                try ip(["-n", client.namespace, "addr", "add", "\(client.address)/24", "dev", "eth0"])
                try ip(["-n", client.namespace, "link", "set", "eth0", "up"])
                try ip(["-n", client.namespace, "link", "set", "lo", "up"])
                try ip(["-n", client.namespace, "route", "add", "default", "via", "198.18.\(network).1"])
                clients[network] = client
            }
        } catch {
            remove()
            throw error
        }
    }

    deinit {
        remove()
    }

    /// Loads an nftables ruleset (`nft -f`) into the core namespace.
    func nft(_ ruleset: String) throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("httpdns-loop-nft-\(UUID().uuidString)")
        try ruleset.write(to: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: file) }
        try ip(["netns", "exec", core, Self.nft, "-f", file.path])
    }

    /// Starts nginx in the core namespace with `servers` (its `server { … }` blocks) in a directory
    /// of its own under `directory`, single-process (`master_process off`: stopping it stops
    /// everything), and waits until its listeners are bound (it writes its pid file then).
    func startNginx(in directory: URL, servers: String) throws {
        let dir = directory.appendingPathComponent("nginx")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let path = { (name: String) in dir.appendingPathComponent(name).path }
        let config = """
            \(geteuid() == 0 ? "user root root;" : "")
            daemon off;
            master_process off;
            pid \(path("nginx.pid"));
            lock_file \(path("nginx.lock"));
            error_log \(path("error.log")) info;
            events { worker_connections 256; }
            http {
              default_type text/plain;
              client_body_temp_path \(path("body"));
              proxy_temp_path \(path("proxy"));
              fastcgi_temp_path \(path("fastcgi"));
              uwsgi_temp_path \(path("uwsgi"));
              scgi_temp_path \(path("scgi"));
              access_log \(path("access.log"));
            \(servers)
            }
            """
        try config.write(toFile: path("nginx.conf"), atomically: true, encoding: .utf8)
        let nginx = try start(in: core, "/usr/sbin/nginx", ["-p", dir.path + "/", "-c", path("nginx.conf"), "-e", path("error.log")])
        let deadline = Date().addingTimeInterval(10)
        while !FileManager.default.fileExists(atPath: path("nginx.pid")) {
            guard nginx.isRunning, Date() < deadline else {
                throw ToolRunner.Failure("nginx did not start: \((try? String(contentsOfFile: path("error.log"), encoding: .utf8)) ?? "")")
            }
            usleep(20_000)
        }
    }

    /// Runs `executable` inside `namespace` and waits for it.
    func run(in namespace: String, _ executable: String, _ arguments: [String], timeout: Duration = .seconds(20)) throws -> ToolRunner.Result {
        try ToolRunner(executable: Self.ip).run(["netns", "exec", namespace, executable] + arguments, timeout: timeout, environment: Self.environment)
    }

    /// Starts `executable` inside `namespace`; it is killed by ``remove()`` if still running then.
    func start(in namespace: String, _ executable: String, _ arguments: [String]) throws -> RunningTool {
        // `ip netns exec` execs the program in its place: the process is the program itself.
        let process = try RunningTool(
            executable: Self.ip, arguments: ["netns", "exec", namespace, executable] + arguments, environment: Self.environment)
        processes.append(process)
        return process
    }

    /// Stops the processes started here (SIGTERM, then SIGKILL), then deletes every namespace (and
    /// with them the veth pairs and the nftables rules). Safe to call twice.
    func remove() {
        for process in processes where process.isRunning {
            process.send(SIGTERM)
            _ = try? process.wait(timeout: .seconds(5))
        }
        processes = []
        for namespace in namespaces.reversed() {
            _ = try? ToolRunner(executable: Self.ip).run(["netns", "del", namespace], timeout: .seconds(20))
        }
        namespaces = []
    }

    private func addNamespace(_ name: String) throws {
        try ip(["netns", "add", name])
        namespaces.append(name)
    }

    private func ip(_ arguments: [String]) throws {
        let result = try ToolRunner(executable: Self.ip).run(arguments, timeout: .seconds(20))
        guard result.status == 0 else {
            throw ToolRunner.Failure("ip \(arguments.joined(separator: " ")) failed (\(result.status)): \(result.stderrText)")
        }
    }

    /// The test's environment without proxy variables: every client here goes straight to the core.
    private static let environment: [String: String] = ProcessInfo.processInfo.environment.filter { key, _ in
        !key.lowercased().hasSuffix("_proxy")
    }
}
