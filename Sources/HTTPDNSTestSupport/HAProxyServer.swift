#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Foundation
import HTTPDNSCore

/// Debian's HAProxy (`/usr/sbin/haproxy`, package `haproxy`) in front of a fleet of test servers:
/// one HTTP frontend on 127.0.0.1 and a free port, one backend whose servers `s1`…`sN` are the
/// fleet's instances, each sent a PROXY v2 header and health-checked with `GET /ready`.
///
/// The configuration is httpdns-serve(8)'s fleet recipe (``recipe``) with the test's addresses; HAProxy
/// runs in the foreground as our child (`-db`), in a temporary directory that holds the
/// configuration, its stderr (server state changes are logged there) and the admin socket that
/// ``serverStates()`` asks. Stopped by ``stop()`` or when the value is released.
package final class HAProxyServer: Sendable {
    /// What to start.
    package struct Configuration: Sendable {
        /// The backend servers' ports on 127.0.0.1, in order: `s1` is the first.
        package var servers: [UInt16]
        /// Where haproxy lives. Default `/usr/sbin/haproxy`.
        package var executable: String = "/usr/sbin/haproxy"
        /// How long to wait for the frontend and the admin socket. Default 10 s.
        package var startTimeout: Duration = .seconds(10)

        package init(servers: [UInt16]) {
            self.servers = servers
        }
    }

    /// Why HAProxy could not be used.
    package struct Failure: Error, CustomStringConvertible {
        package var description: String
    }

    /// The balancing part of the configuration, as httpdns-serve(8) shows it: the same lines, in the
    /// same order, follow `defaults` and `backend httpdns` there (the tool tests compare them).
    ///
    /// - `send-proxy-v2` gives each instance the client's address (`--trusted-proxy` reads it).
    /// - `/ready` answers 503 once an instance drains, and a check is a new connection: `inter
    ///   200ms fall 1` takes a draining instance out within about 200 ms, which `--drain-delay`
    ///   must exceed, and `rise 1` puts a restarted one back at its first good answer.
    /// - `retries 3` with `option redispatch` sends a request whose connection failed to another
    ///   instance; `retry-on conn-failure empty-response` also retries one whose idle keep-alive
    ///   connection the instance closed as the request went out (the HTTP/1.1 race every pool
    ///   meets; DNS queries and reports are safe to send twice).
    /// - `http-reuse safe` (HAProxy's default, written out) sends a client's first request on a
    ///   connection of its own, so that it never meets that race on an idle connection.
    package static let recipe: (defaults: [String], backend: [String]) = (
        defaults: [
            "mode http",
            "timeout connect 1s",
            "timeout client 30s",
            "timeout server 30s",
            "timeout check 1s",
            "retries 3",
            "option redispatch",
            "retry-on conn-failure empty-response",
        ],
        backend: [
            "balance roundrobin",
            "option httpchk GET /ready",
            "http-check expect status 200",
            "http-reuse safe",
            "default-server check inter 200ms fall 1 rise 1 send-proxy-v2",
        ]
    )

    package let configuration: Configuration
    /// The frontend's port on 127.0.0.1.
    package let port: UInt16
    /// The temporary directory with the configuration, HAProxy's output and its admin socket.
    package let directory: URL
    private let process: HTTPDNSLock<ChildProcess?>

    /// Starts haproxy and waits until its frontend accepts and its admin socket answers (the
    /// servers' first checks may still be running: see ``waitForServer(_:state:within:)``).
    ///
    /// - Throws: ``Failure`` when haproxy is not installed (naming the apt package), refuses its
    ///   configuration or exits at start (with its output), or is not ready in time.
    package init(_ configuration: Configuration) throws {
        guard FileManager.default.isExecutableFile(atPath: configuration.executable) else {
            throw Failure(description: "haproxy not found at \(configuration.executable): install the Debian package haproxy (apt-get install haproxy)")
        }
        self.configuration = configuration
        let workDirectory = FileManager.default.temporaryDirectory.appendingPathComponent("httpdns-haproxy-\(UUID().uuidString)")
        directory = workDirectory
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        do {
            let started = try Dnsmasq.onFreePort { port in try HAProxyServer.launch(configuration, port: port, directory: workDirectory) }
            self.port = started.port
            self.process = HTTPDNSLock(started.value)
        } catch {
            try? FileManager.default.removeItem(at: directory)
            throw error
        }
    }

    deinit { stop() }

    /// Stops HAProxy (SIGTERM, then waits) and removes its directory. Safe to call twice.
    package func stop() {
        guard let running = process.withLock({ $0.take() }) else { return }
        running.stop(timeout: .seconds(5))
        try? FileManager.default.removeItem(at: directory)
    }

    /// `http://127.0.0.1:PORT`.
    package var url: String { "http://127.0.0.1:\(port)" }

    /// What HAProxy has printed so far (alerts, and every server going up or down).
    package var log: String {
        (try? String(contentsOf: directory.appendingPathComponent("haproxy.log"), encoding: .utf8)) ?? ""
    }

    /// The backend server named for the instance at `index` of ``Configuration/servers``.
    package static func serverName(_ index: Int) -> String { "s\(index + 1)" }

    /// Each backend server's state as HAProxy's checks see it (`show stat`'s `status`: `UP`,
    /// `DOWN`, `MAINT`…), by name.
    package func serverStates() throws -> [String: String] {
        let table = try Self.ask("show stat", socket: socketPath)
        let lines = table.split(separator: "\n")
        guard let header = lines.first, header.hasPrefix("# ") else {
            throw Failure(description: "haproxy's show stat has no header: \(table)")
        }
        let columns = header.dropFirst(2).split(separator: ",", omittingEmptySubsequences: false)
        guard let name = columns.firstIndex(of: "svname"), let status = columns.firstIndex(of: "status") else {
            throw Failure(description: "haproxy's show stat lacks svname or status: \(header)")
        }
        var states: [String: String] = [:]
        for line in lines.dropFirst() where line.hasPrefix("httpdns,") {
            let fields = line.split(separator: ",", omittingEmptySubsequences: false)
            guard fields.count > max(name, status), !["FRONTEND", "BACKEND"].contains(fields[name]) else { continue }
            states[String(fields[name])] = String(fields[status])
        }
        return states
    }

    /// Waits until HAProxy's checks put server `name` in `state`.
    /// - Throws: ``Failure`` with the states seen and HAProxy's output when `within` passes first.
    package func waitForServer(_ name: String, state: String = "UP", within timeout: Duration = .seconds(10)) throws {
        var seen: [String: String] = [:]
        let reached = pollUntilBlocking(within: timeout, every: .milliseconds(20)) {
            seen = (try? serverStates()) ?? [:]
            return seen[name] == state
        }
        guard reached else {
            throw Failure(description: "haproxy did not see \(name) \(state) within \(timeout) (states \(seen)); its output:\n\(log)")
        }
    }

    /// What to read when a test fails: HAProxy's lines about servers going up or down, and its log
    /// lines (`option httplog`) of requests not answered 200, not ended normally (a termination
    /// state other than `----`), or taking `slowerThan` milliseconds or more (`Tq/Tw/Tc/Tr/Tt`
    /// says where the time went); at most `limit` lines.
    package func notableLog(slowerThan threshold: Int = 100, limit: Int = 60) -> [String] {
        let lines = log.split(separator: "\n").filter { line in
            if line.contains("Server httpdns/") { return true }
            let fields = line.split(separator: " ")
            // client [date] frontend backend/server Tq/Tw/Tc/Tr/Tt status bytes cookie cookie state …
            guard fields.count > 9, fields[3].hasPrefix("httpdns/"), !line.contains("<BADREQ>") else { return false }
            let total = fields[4].split(separator: "/").last.flatMap { Int($0) } ?? 0
            return fields[5] != "200" || fields[9] != "----" || total >= threshold
        }
        return lines.prefix(limit).map(String.init)
    }

    private var socketPath: String { directory.appendingPathComponent("admin.sock").path }

    static func configurationText(_ configuration: Configuration, port: UInt16, socket: String) -> String {
        let servers = configuration.servers.enumerated().map { "    server \(serverName($0.offset)) 127.0.0.1:\($0.element)" }
        // Besides the recipe: the admin socket, and every request logged to stderr (``notableLog``).
        return ([
            "global", "    maxconn 2000", "    stats socket \(socket) level admin", "    log stderr format raw local0",
            "defaults", "    log global", "    option httplog",
        ] + recipe.defaults.map { "    " + $0 }
            + ["frontend httpdns", "    bind 127.0.0.1:\(port)", "    default_backend httpdns", "backend httpdns"]
            + recipe.backend.map { "    " + $0 } + servers).joined(separator: "\n") + "\n"
    }

    static func launch(_ configuration: Configuration, port: UInt16, directory: URL) throws -> ChildProcess {
        let socket = directory.appendingPathComponent("admin.sock").path
        let configPath = directory.appendingPathComponent("haproxy.cfg")
        try configurationText(configuration, port: port, socket: socket).write(to: configPath, atomically: true, encoding: .utf8)
        let logPath = directory.appendingPathComponent("haproxy.log")
        try? FileManager.default.removeItem(at: logPath)
        // -db: stay in the foreground, our child, printing to the log file.
        let process = try ChildProcess(executable: configuration.executable, arguments: ["-db", "-f", configPath.path], output: logPath, stopTimeout: .seconds(5))
        let deadline = ContinuousClock.now + configuration.startTimeout
        while ContinuousClock.now < deadline {
            guard process.isRunning else {
                process.stop(timeout: nil)
                throw Failure(description: "haproxy exited at start: \((try? String(contentsOf: logPath, encoding: .utf8)) ?? "")")
            }
            if KnotServer.accepts(port: port), (try? ask("show info", socket: socket)) != nil { return process }
            usleep(20_000)
        }
        process.stop(timeout: nil)
        throw Failure(description: "haproxy on 127.0.0.1:\(port) was not ready within \(configuration.startTimeout): \((try? String(contentsOf: logPath, encoding: .utf8)) ?? "")")
    }
}

extension HAProxyServer {
    /// Sends one command to HAProxy's admin socket and reads the answer (HAProxy closes after it).
    static func ask(_ command: String, socket path: String) throws -> String {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw Failure(description: "socket: \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else {
            throw Failure(description: "the admin socket's path is too long for a Unix socket: \(path)")
        }
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes) }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard connected == 0 else { throw Failure(description: "connect \(path): \(String(cString: strerror(errno)))") }
        var timeout = timeval(tv_sec: 2, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let line = Array((command + "\n").utf8)
        guard line.withUnsafeBytes({ send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }) == line.count else {
            throw Failure(description: "send to \(path): \(String(cString: strerror(errno)))")
        }
        var answer: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 16_384)
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count == 0 { break }
            guard count > 0 else { throw Failure(description: "recv from \(path): \(String(cString: strerror(errno)))") }
            answer += buffer[..<count]
        }
        return String(decoding: answer, as: UTF8.self)
    }
}
