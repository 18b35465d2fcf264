#if canImport(Glibc)
import Glibc
#endif
import Foundation
import HTTPDNSCore
import HTTPDNSTestSupport
import XCTest

/// `httpdns serve` instances on 127.0.0.1, each on a port of its own that it keeps across restarts.
///
/// The test thread starts, restarts and stops them; ``signal(_:)`` may come from another thread
/// (``ZoneChanger``'s) and reaches the instances in service only: never one that is stopping (once
/// its drain is over, SIGHUP's default action is back and would end it with 129) nor one not
/// started yet.
final class Fleet: Sendable {
    /// Each instance's port, in order.
    let ports: [Int]
    private let runner: ToolRunner
    private let arguments: [String]
    private let instances: HTTPDNSLock<[RunningTool]>
    /// The process of each instance in service; nil while it is restarted.
    private let inService: HTTPDNSLock<[pid_t?]>

    /// Starts `count` instances of `serve --listen 127.0.0.1:0` with `arguments`.
    init(runner: ToolRunner, arguments: [String], count: Int = 3) throws {
        self.runner = runner
        self.arguments = arguments
        var started: [RunningTool] = []
        var ports: [Int] = []
        for _ in 0..<count {
            let (instance, port) = try Self.start(runner, port: 0, arguments: arguments)
            started.append(instance)
            ports.append(port)
        }
        self.ports = ports
        instances = HTTPDNSLock(started)
        inService = HTTPDNSLock(started.map { $0.processIdentifier })
    }

    /// Sends `signal` to every instance in service.
    func signal(_ signal: Int32) {
        // Under the lock: an instance taken out of service is not reaped while this signals it.
        inService.withLock { pids in
            for pid in pids.compactMap({ $0 }) { kill(pid, signal) }
        }
    }

    /// Restarts instance `index` as a supervisor would, one step after the other: SIGTERM (its
    /// drain starts; HAProxy's checks see it go), its exit with status 0, a new instance on the
    /// same port, and HAProxy's checks seeing that one up.
    func restart(_ index: Int, haproxy: HAProxyServer, test: ToolTestCase) throws {
        let name = HAProxyServer.serverName(index)
        let old = instances.withLock { $0[index] }
        inService.withLock { $0[index] = nil }
        old.send(SIGTERM)
        try haproxy.waitForServer(name, state: "DOWN")
        test.assertStopsCleanly(old, signalled: true)
        let (new, _) = try Self.start(runner, port: ports[index], arguments: arguments)
        instances.withLock { $0[index] = new }
        inService.withLock { $0[index] = new.processIdentifier }
        try haproxy.waitForServer(name, state: "UP")
    }

    /// Stops every instance in service, asserting a clean stop (exit 0, no sanitizer report).
    func stopAll(_ test: ToolTestCase) {
        let running = inService.withLock { pids in
            defer { pids = pids.map { _ in nil } }
            return pids
        }
        for (index, pid) in running.enumerated() where pid != nil {
            test.assertStopsCleanly(instances.withLock { $0[index] })
        }
    }

    private static func start(_ runner: ToolRunner, port: Int, arguments: [String]) throws -> (RunningTool, Int) {
        let instance = try runner.start(["serve", "--listen", "127.0.0.1:\(port)"] + arguments)
        let line = try instance.waitForLine(startingWith: "listening on ")
        guard let bound = line.split(separator: ":").last.flatMap({ Int($0) }), port == 0 || bound == port else {
            throw ToolRunner.Failure("serve on 127.0.0.1:\(port) said: \(line)")
        }
        return (instance, bound)
    }
}
