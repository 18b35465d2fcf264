#if canImport(Glibc)
import Glibc
#endif
import Foundation
import HTTPDNSCore

/// Knot DNS (`knotd`, Debian's `knot`) as a test's primary: one zone from a zone file, transfers
/// allowed with one TSIG key (HMAC-SHA256), changes made with `knotc` (each commit raises the
/// serial and goes to the journal, from which Knot serves IXFR). On a loopback port of its own, in
/// a temporary directory, stopped at ``stop()``.
package final class KnotServer: Sendable {
    package struct Failure: Error, CustomStringConvertible {
        package var description: String
    }

    package static let knotd = "/usr/sbin/knotd"
    package static let knotc = "/usr/sbin/knotc"

    package let zone: String
    package let address: HTTPDNSIPAddress
    package let port: UInt16
    /// `name:secret` of the transfer key (base64 secret).
    package let keyName: String
    package let keySecret: String
    package let directory: URL
    private let process: HTTPDNSLock<ChildProcess?>

    /// Starts knotd serving `zone` with `records` (zone-file lines relative to the origin, e.g.
    /// `www 300 A 192.0.2.1`) under an SOA of serial `serial` and timers `refresh`, `retry` and
    /// `expire` (seconds); transfers need the key. With `notify`, each change is announced by a
    /// NOTIFY signed with the key to that UDP port on 127.0.0.1.
    package init(
        zone: String = "example.test", serial: UInt32 = 1, refresh: UInt32 = 60, retry: UInt32 = 10, expire: UInt32 = 3600,
        records: [String], keyName: String = "xfr-key", notify: UInt16? = nil
    ) throws {
        guard FileManager.default.isExecutableFile(atPath: Self.knotd) else {
            throw Failure(description: "knotd not found at \(Self.knotd): install the Debian package knot (apt-get install knot)")
        }
        self.zone = zone
        self.keyName = keyName
        var secret = [UInt8](repeating: 0, count: 32)
        for index in secret.indices { secret[index] = UInt8.random(in: 0...255) }
        keySecret = Data(secret).base64EncodedString()
        address = HTTPDNSIPAddress("127.0.0.1")!
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("httpdns-knot-\(UUID().uuidString)")
        for sub in ["run", "db", "zones"] {
            try FileManager.default.createDirectory(at: directory.appendingPathComponent(sub), withIntermediateDirectories: true)
        }
        let zoneText = (["$ORIGIN \(zone).", "$TTL 300", "@ 3600 SOA ns1 hostmaster \(serial) \(refresh) \(retry) \(expire) 30", "@ 3600 NS ns1", "ns1 A 192.0.2.53"]
            + records).joined(separator: "\n") + "\n"
        try zoneText.write(to: directory.appendingPathComponent("zones/\(zone).zone"), atomically: true, encoding: .utf8)
        var lastError: (any Error)?
        for _ in 0..<5 {
            do {
                let port = try Dnsmasq.freePort(on: address)
                let running = try Self.launch(zone: zone, port: port, keyName: keyName, secret: keySecret, notify: notify, directory: directory)
                self.port = port
                self.process = HTTPDNSLock(running)
                return
            } catch {
                lastError = error
            }
        }
        try? FileManager.default.removeItem(at: directory)
        throw lastError ?? Failure(description: "knotd did not start")
    }

    deinit { stop() }

    package func stop() {
        guard let running = process.withLock({ $0.take() }) else { return }
        _ = running.stop(timeout: .seconds(5))
        try? FileManager.default.removeItem(at: directory)
    }

    /// knotd's log so far.
    package var log: String {
        (try? String(contentsOf: directory.appendingPathComponent("knotd.log"), encoding: .utf8)) ?? ""
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
    /// owner relative to the zone); Knot raises the serial.
    package func change(set: [String] = [], unset: [String] = []) throws {
        try control(["zone-begin", zone])
        do {
            for line in set { try control(["zone-set", zone] + line.split(separator: " ").map(String.init)) }
            for line in unset { try control(["zone-unset", zone] + line.split(separator: " ").map(String.init)) }
            try control(["zone-commit", zone])
        } catch {
            _ = try? control(["zone-abort", zone])
            throw error
        }
    }

    /// `notify`: a port on 127.0.0.1 that gets a NOTIFY (signed with the key) after each change.
    static func launch(zone: String, port: UInt16, keyName: String, secret: String, notify: UInt16?, directory: URL) throws -> ChildProcess {
        let remote = notify.map { "remote:\n  - id: secondary\n    address: 127.0.0.1@\($0)\n    key: \(keyName)\n" } ?? ""
        let notifyLine = notify == nil ? "" : "    notify: secondary\n"
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
            \(remote)
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
        let configPath = directory.appendingPathComponent("knot.conf")
        try config.write(to: configPath, atomically: true, encoding: .utf8)
        let logPath = directory.appendingPathComponent("knotd.log")
        let process = try ChildProcess(executable: knotd, arguments: ["-c", configPath.path], output: logPath, stopTimeout: .seconds(5))
        let deadline = ContinuousClock.now + .seconds(15)
        while ContinuousClock.now < deadline {
            guard process.isRunning else {
                _ = process.stop(timeout: nil)
                throw Failure(description: "knotd exited at start: \((try? String(contentsOf: logPath, encoding: .utf8)) ?? "")")
            }
            let text = (try? String(contentsOf: logPath, encoding: .utf8)) ?? ""
            if text.contains("loaded, serial"), Self.accepts(port: port) { return process }
            usleep(20_000)
        }
        _ = process.stop(timeout: nil)
        throw Failure(description: "knotd did not load \(zone) on 127.0.0.1:\(port) within 15 s: \((try? String(contentsOf: logPath, encoding: .utf8)) ?? "")")
    }

    static func accepts(port: UInt16) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        return Dnsmasq.withSockAddr(HTTPDNSIPAddress("127.0.0.1")!, port) { connect(fd, $0, $1) } == 0
    }
}
