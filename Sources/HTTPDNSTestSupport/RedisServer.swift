#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Foundation
import HTTPDNSCore

/// A real Redis (Debian `redis-server`) on 127.0.0.1 and a free port, with a password, for tests.
///
/// Nothing is saved to disk (`save ""`, no AOF): each start is an empty Redis. ``stop()`` and
/// ``restart()`` let a test take Redis away mid-run and bring it back on the same port. The process
/// is stopped by ``stop()`` or when the value is released.
package final class RedisServer: Sendable {
    /// What to start.
    package struct Configuration: Sendable {
        /// `requirepass`. Default `redis-test-password`.
        package var password: String = "redis-test-password"
        /// Where redis-server lives. Default `/usr/bin/redis-server`.
        package var executable: String = "/usr/bin/redis-server"
        /// How long to wait for the first reply. Default 10 s.
        package var startTimeout: Duration = .seconds(10)
        /// More lines for the config file (`user fleet on >pw ~httpdns:* +@all`). Default none.
        package var extraDirectives: [String] = []

        package init() {}
    }

    /// Why Redis could not be used.
    package struct Failure: Error, CustomStringConvertible {
        package var description: String
    }

    package let configuration: Configuration
    /// The TCP port on 127.0.0.1.
    package let port: UInt16
    /// The temporary directory with the config file and Redis' log.
    package let directory: URL
    private let process: HTTPDNSLock<ChildProcess?>

    /// Starts redis-server and waits until it replies.
    ///
    /// - Throws: ``Failure`` when redis-server is not installed (naming the apt package), exits at
    ///   start (with its log), or does not reply within ``Configuration/startTimeout``.
    package init(_ configuration: Configuration = Configuration()) throws {
        guard FileManager.default.isExecutableFile(atPath: configuration.executable) else {
            throw Failure(description: "redis-server not found at \(configuration.executable): install the Debian package redis-server")
        }
        self.configuration = configuration
        let workDirectory = FileManager.default.temporaryDirectory.appendingPathComponent("httpdns-redis-\(UUID().uuidString)")
        directory = workDirectory
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        do {
            let started = try Dnsmasq.onFreePort { port in try RedisServer.launch(configuration, port: port, directory: workDirectory) }
            self.port = started.port
            self.process = HTTPDNSLock(started.value)
        } catch {
            try? FileManager.default.removeItem(at: directory)
            throw error
        }
    }

    deinit {
        stop()
        try? FileManager.default.removeItem(at: directory)
    }

    /// `redis://:PASSWORD@127.0.0.1:PORT`, or with `password` instead of the right one.
    package func url(password: String? = nil) -> String {
        "redis://:\(password ?? configuration.password)@127.0.0.1:\(port)"
    }

    /// Stops Redis (SIGTERM, then waits); its data is gone. Safe to call twice.
    package func stop() {
        process.withLock { $0.take() }?.stop(timeout: .seconds(5))
    }

    /// Starts Redis again, empty, on the same port.
    package func restart() throws {
        stop()
        let running = try Self.launch(configuration, port: port, directory: directory)
        process.withLock { $0 = running }
    }

    /// What Redis has logged so far.
    package var log: String {
        (try? String(contentsOf: directory.appendingPathComponent("redis.log"), encoding: .utf8)) ?? ""
    }

    static func launch(_ configuration: Configuration, port: UInt16, directory: URL) throws -> ChildProcess {
        let config = ([
            "bind 127.0.0.1", "port \(port)", "requirepass \(configuration.password)", "save \"\"", "appendonly no",
            "daemonize no", "dir \(directory.path)", "databases 4",
        ] + configuration.extraDirectives).joined(separator: "\n") + "\n"
        let configPath = directory.appendingPathComponent("redis.conf")
        try config.write(to: configPath, atomically: true, encoding: .utf8)
        let logPath = directory.appendingPathComponent("redis.log")
        let process = try ChildProcess(executable: configuration.executable, arguments: [configPath.path], output: logPath, stopTimeout: .seconds(5))
        let deadline = ContinuousClock.now + configuration.startTimeout
        while ContinuousClock.now < deadline {
            guard process.isRunning else {
                process.stop(timeout: nil)
                throw Failure(description: "redis-server exited at start: \((try? String(contentsOf: logPath, encoding: .utf8)) ?? "")")
            }
            if replies(port: port) { return process }
            usleep(20_000)
        }
        process.stop(timeout: nil)
        throw Failure(description: "redis-server on 127.0.0.1:\(port) did not reply within \(configuration.startTimeout)")
    }

    /// Sends PING and waits up to 200 ms for any reply (`-NOAUTH` counts: Redis is up).
    static func replies(port: UInt16) -> Bool {
        let fd = socket(AF_INET, Dnsmasq.socketType(datagram: false), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        guard Dnsmasq.withSockAddr(HTTPDNSIPAddress("127.0.0.1")!, port, { connect(fd, $0, $1) }) == 0 else { return false }
        let ping = Array("*1\r\n$4\r\nPING\r\n".utf8)
        guard ping.withUnsafeBytes({ send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }) == ping.count else { return false }
        var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&entry, 1, 200) == 1 else { return false }
        var buffer = [UInt8](repeating: 0, count: 64)
        return buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) } > 0
    }
}
