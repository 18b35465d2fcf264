#if canImport(Glibc)
import Glibc
#endif
import Foundation
import HTTPDNSCore

/// Knot DNS (`knotd`, Debian's `knot`) as a test's primary: one zone from a zone file, transfers
/// allowed with one TSIG key (HMAC-SHA256), changes made with `knotc` (each commit raises the
/// serial and goes to the journal, from which Knot serves IXFR). On a loopback port of its own, in
/// a temporary directory, stopped at ``stop()``.
package final class KnotServer: TransferPrimary {
    package struct Failure: Error, CustomStringConvertible {
        package var description: String
    }

    package static let knotd = "/usr/sbin/knotd"
    package static let knotc = "/usr/sbin/knotc"

    /// What the configuration and the zone file are written from; changed by ``reconfigure(notify:)``
    /// and ``restart(serial:records:)``.
    private struct Settings {
        var notify: [UInt16]
        var refresh: UInt32
        var retry: UInt32
        var expire: UInt32
    }

    package let zone: String
    package let address: HTTPDNSIPAddress
    package let port: UInt16
    /// `name:secret` of the transfer key (base64 secret).
    package let keyName: String
    package let keySecret: String
    package let directory: URL
    private let settings: HTTPDNSLock<Settings>
    private let process: HTTPDNSLock<ChildProcess?>

    /// Starts knotd serving `zone` with `records` (zone-file lines relative to the origin, e.g.
    /// `www 300 A 192.0.2.1`) under an SOA of serial `serial` and timers `refresh`, `retry` and
    /// `expire` (seconds); transfers need the key. Each change is announced by a NOTIFY signed
    /// with the key to each port of `notify` on 127.0.0.1 (default none).
    package init(
        zone: String = "example.test", serial: UInt32 = 1, refresh: UInt32 = 60, retry: UInt32 = 10, expire: UInt32 = 3600,
        records: [String], keyName: String = "xfr-key", notify: [UInt16] = []
    ) throws {
        guard FileManager.default.isExecutableFile(atPath: Self.knotd) else {
            throw Failure(description: "knotd not found at \(Self.knotd): install the Debian package knot (apt-get install knot)")
        }
        self.zone = zone
        self.keyName = keyName
        keySecret = Self.randomSecret()
        address = HTTPDNSIPAddress("127.0.0.1")!
        let workDirectory = FileManager.default.temporaryDirectory.appendingPathComponent("httpdns-knot-\(UUID().uuidString)")
        directory = workDirectory
        let settings = Settings(notify: notify, refresh: refresh, retry: retry, expire: expire)
        self.settings = HTTPDNSLock(settings)
        do {
            let secret = keySecret
            let started = try Dnsmasq.onFreePort(address) { port in
                try KnotServer.prepare(workDirectory, zone: zone, serial: serial, records: records, settings)
                return try KnotServer.launch(zone: zone, port: port, keyName: keyName, secret: secret, settings, directory: workDirectory)
            }
            self.port = started.port
            self.process = HTTPDNSLock(started.value)
        } catch {
            try? FileManager.default.removeItem(at: directory)
            throw error
        }
    }

    /// The same with NOTIFY to one port, or none.
    package convenience init(
        zone: String = "example.test", serial: UInt32 = 1, refresh: UInt32 = 60, retry: UInt32 = 10, expire: UInt32 = 3600,
        records: [String], keyName: String = "xfr-key", notify: UInt16?
    ) throws {
        try self.init(
            zone: zone, serial: serial, refresh: refresh, retry: retry, expire: expire, records: records, keyName: keyName,
            notify: notify.map { [$0] } ?? [])
    }

    deinit { stop() }

    package func stop() {
        guard let running = process.withLock({ $0.take() }) else { return }
        _ = running.stop(timeout: .seconds(5))
        try? FileManager.default.removeItem(at: directory)
    }

    /// knotd's log so far (every run's, restarts included).
    package var log: String {
        (try? String(contentsOf: directory.appendingPathComponent("knotd.log"), encoding: .utf8)) ?? ""
    }

    /// Knot logs `[zone.] IXFR, outgoing, remote …, started, serial A -> B`.
    package var outgoingIXFRCount: Int {
        log.split(separator: "\n").filter { $0.contains("IXFR, outgoing") && $0.contains("started") }.count
    }

    private var configPath: String { directory.appendingPathComponent("knot.conf").path }

    /// Runs `knotc` with `arguments` against this server; throws with its output when it fails.
    /// (Spawned by ``RunningTool``, not Foundation's `Process`, whose fd scan AddressSanitizer
    /// catches reading past its buffer.)
    @discardableResult
    package func control(_ arguments: [String]) throws -> String {
        let knotc = try RunningTool(executable: URL(fileURLWithPath: Self.knotc), arguments: ["-c", configPath] + arguments)
        let status = try knotc.wait(timeout: .seconds(30))
        let output = String(decoding: knotc.stdout + knotc.stderr, as: UTF8.self)
        guard status == 0 else {
            throw Failure(description: "knotc \(arguments.joined(separator: " ")) exited \(status): \(output)")
        }
        return output
    }

    /// One committed change: `set` lines added and `unset` lines removed (`owner ttl TYPE data`,
    /// owner relative to the zone); Knot raises the serial and sends its NOTIFY.
    ///
    /// - Returns: when `knotc zone-commit` was started.
    @discardableResult
    package func change(set: [String] = [], unset: [String] = []) throws -> ContinuousClock.Instant {
        try control(["zone-begin", zone])
        do {
            for line in set { try control(["zone-set", zone] + line.split(separator: " ").map(String.init)) }
            for line in unset { try control(["zone-unset", zone] + line.split(separator: " ").map(String.init)) }
            let committing = ContinuousClock.now
            try control(["zone-commit", zone])
            return committing
        } catch {
            _ = try? control(["zone-abort", zone])
            throw error
        }
    }

    /// Rewrites the configuration with the new NOTIFY ports and has knotd reload it (`knotc reload`).
    package func reconfigure(notify ports: [UInt16]) throws {
        let settings = self.settings.withLock { settings in
            settings.notify = ports
            return settings
        }
        try Self.writeConfig(zone: zone, port: port, keyName: keyName, secret: keySecret, settings, directory: directory)
        try control(["reload"])
    }

    /// Stops knotd, writes a zone file of `serial` and `records`, empties the journal and starts
    /// knotd again on the same port (a few tries: the port may linger a moment).
    package func restart(serial: UInt32, records: [String]) throws {
        let settings = self.settings.withLock { $0 }
        guard let old = process.withLock({ $0.take() }) else { throw Failure(description: "knotd was stopped") }
        _ = old.stop(timeout: .seconds(5))
        try FileManager.default.removeItem(at: directory.appendingPathComponent("db"))
        try Self.prepare(directory, zone: zone, serial: serial, records: records, settings)
        var lastError: (any Error)?
        for _ in 0..<5 {
            do {
                let running = try Self.launch(zone: zone, port: port, keyName: keyName, secret: keySecret, settings, directory: directory)
                process.withLock { $0 = running }
                return
            } catch {
                lastError = error
                usleep(200_000)
            }
        }
        throw lastError ?? Failure(description: "knotd did not start again")
    }

    private static func prepare(_ directory: URL, zone: String, serial: UInt32, records: [String], _ settings: Settings) throws {
        for sub in ["run", "db", "zones"] {
            try FileManager.default.createDirectory(at: directory.appendingPathComponent(sub), withIntermediateDirectories: true)
        }
        let text = zoneFile(zone: zone, serial: serial, refresh: settings.refresh, retry: settings.retry, expire: settings.expire, records: records)
        try text.write(to: directory.appendingPathComponent("zones/\(zone).zone"), atomically: true, encoding: .utf8)
    }

    private static func writeConfig(zone: String, port: UInt16, keyName: String, secret: String, _ settings: Settings, directory: URL) throws {
        let remotes = settings.notify.enumerated().map { index, port in
            "  - id: secondary-\(index)\n    address: 127.0.0.1@\(port)\n    key: \(keyName)\n"
        }.joined()
        let notifyLine = settings.notify.isEmpty ? ""
            : "    notify: [\(settings.notify.indices.map { "secondary-\($0)" }.joined(separator: ", "))]\n"
        let config = """
            server:
                rundir: "\(directory.appendingPathComponent("run").path)"
                listen: 127.0.0.1@\(port)
            log:
              - target: stderr
                any: info
            database:
                storage: "\(directory.appendingPathComponent("db").path)"
            key:
              - id: \(keyName)
                algorithm: hmac-sha256
                secret: \(secret)
            acl:
              - id: transfer
                key: \(keyName)
                action: transfer
            \(remotes.isEmpty ? "" : "remote:\n" + remotes)
            template:
              - id: default
                storage: "\(directory.appendingPathComponent("zones").path)"
                file: "%s.zone"
                zonefile-sync: -1
                journal-content: changes
            zone:
              - domain: \(zone)
                acl: transfer
            \(notifyLine)
            """
        try config.write(to: directory.appendingPathComponent("knot.conf"), atomically: true, encoding: .utf8)
    }

    private static func launch(
        zone: String, port: UInt16, keyName: String, secret: String, _ settings: Settings, directory: URL
    ) throws -> ChildProcess {
        try writeConfig(zone: zone, port: port, keyName: keyName, secret: secret, settings, directory: directory)
        let configPath = directory.appendingPathComponent("knot.conf")
        let logPath = directory.appendingPathComponent("knotd.log")
        // The log is shared by restarts: only what this run wrote says whether it has loaded.
        let start = ((try? FileManager.default.attributesOfItem(atPath: logPath.path)[.size]) as? Int) ?? 0
        func thisRun() -> String {
            let data = (try? Data(contentsOf: logPath)) ?? Data()
            return String(decoding: data.dropFirst(start), as: UTF8.self)
        }
        let process = try ChildProcess(executable: knotd, arguments: ["-c", configPath.path], output: logPath, stopTimeout: .seconds(5))
        let deadline = ContinuousClock.now + .seconds(15)
        while ContinuousClock.now < deadline {
            guard process.isRunning else {
                _ = process.stop(timeout: nil)
                throw Failure(description: "knotd exited at start: \(thisRun())")
            }
            if thisRun().contains("loaded, serial"), Self.accepts(port: port) { return process }
            usleep(20_000)
        }
        _ = process.stop(timeout: nil)
        throw Failure(description: "knotd did not load \(zone) on 127.0.0.1:\(port) within 15 s: \(thisRun())")
    }

    static func accepts(port: UInt16) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        return Dnsmasq.withSockAddr(HTTPDNSIPAddress("127.0.0.1")!, port) { connect(fd, $0, $1) } == 0
    }
}
