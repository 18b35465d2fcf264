#if canImport(Glibc)
import Glibc
#endif
import Foundation
import HTTPDNSCore

/// BIND 9 (`named`, Debian's `bind9`) as a test's primary: one dynamic zone from a zone file,
/// transfers and updates allowed with one TSIG key (HMAC-SHA256), changes sent with `nsupdate`
/// (Debian's `bind9-dnsutils`; each raises the serial and goes to the zone's journal, from which
/// BIND serves IXFR), NOTIFY to an explicit list of ports. In the foreground (`-g`, logging to
/// stderr) on a loopback port of its own, in a temporary directory, stopped at ``stop()``.
///
/// It runs as whoever runs the tests: without `-u`, named keeps the user it was started as (root in
/// CI, anyone else on a workstation); every file it writes is in the temporary directory, and the
/// defaults that point elsewhere (pid file, session key, the rndc channel on port 953) are turned off.
package final class NamedServer: TransferPrimary {
    package struct Failure: Error, CustomStringConvertible {
        package var description: String
    }

    package static let named = "/usr/sbin/named"
    package static let nsupdate = "/usr/bin/nsupdate"

    /// A view of the zone served to the secondaries that sign with its own key (`match-clients {
    /// key …; }`), BIND's split horizon; the zone's own key gets the `default` view.
    package struct View: Sendable {
        package var name: String
        package var keyName: String
        package var records: [String]
        /// The key's secret (base64), made at random.
        package let keySecret: String

        package init(name: String, keyName: String, records: [String]) {
            self.name = name
            self.keyName = keyName
            self.records = records
            keySecret = NamedServer.randomSecret()
        }
    }

    private struct Settings {
        var notify: [UInt16]
        var secret: String
        var refresh: UInt32
        var retry: UInt32
        var expire: UInt32
        var views: [View] = []
    }

    package let zone: String
    package let address: HTTPDNSIPAddress
    package let port: UInt16
    package let keyName: String
    package let directory: URL
    private let settings: HTTPDNSLock<Settings>
    private let process: HTTPDNSLock<ChildProcess?>

    /// Starts named serving `zone` with `records` (zone-file lines relative to the origin, e.g.
    /// `www 300 A 192.0.2.1`) under an SOA of serial `serial` and timers `refresh`, `retry` and
    /// `expire` (seconds); transfers and updates need the key. Each change is announced by a NOTIFY
    /// signed with the key to each port of `notify` on 127.0.0.1 (default none).
    ///
    /// - Throws: ``Failure`` when named or nsupdate is not installed (naming the Debian package),
    ///   exits at start, or has not loaded the zone within 15 s (with its log).
    package init(
        zone: String = "example.test", serial: UInt32 = 1, refresh: UInt32 = 60, retry: UInt32 = 10, expire: UInt32 = 3600,
        records: [String], keyName: String = "xfr-key", notify: [UInt16] = [], views: [View] = []
    ) throws {
        guard FileManager.default.isExecutableFile(atPath: Self.named) else {
            throw Failure(description: "named not found at \(Self.named): install the Debian package bind9 (apt-get install bind9)")
        }
        guard FileManager.default.isExecutableFile(atPath: Self.nsupdate) else {
            throw Failure(description: "nsupdate not found at \(Self.nsupdate): install the Debian package bind9-dnsutils (apt-get install bind9-dnsutils)")
        }
        self.zone = zone
        self.keyName = keyName
        address = HTTPDNSIPAddress("127.0.0.1")!
        let workDirectory = FileManager.default.temporaryDirectory.appendingPathComponent("httpdns-named-\(UUID().uuidString)")
        directory = workDirectory
        let settings = Settings(notify: notify, secret: Self.randomSecret(), refresh: refresh, retry: retry, expire: expire, views: views)
        self.settings = HTTPDNSLock(settings)
        do {
            let started = try Dnsmasq.onFreePort(address) { port in
                try FileManager.default.createDirectory(at: workDirectory, withIntermediateDirectories: true)
                try NamedServer.writeZone(zone: zone, serial: serial, records: records, settings, directory: workDirectory)
                return try NamedServer.launch(zone: zone, port: port, keyName: keyName, settings, directory: workDirectory)
            }
            self.port = started.port
            self.process = HTTPDNSLock(started.value)
        } catch {
            try? FileManager.default.removeItem(at: directory)
            throw error
        }
    }

    deinit { stop() }

    package func stop() {
        guard let running = process.withLock({ $0.take() }) else { return }
        _ = running.stop(timeout: .seconds(5))
        try? FileManager.default.removeItem(at: directory)
    }

    package var keySecret: String { settings.withLock { $0.secret } }

    /// named's log so far (every run's, restarts included).
    package var log: String {
        (try? String(contentsOf: directory.appendingPathComponent("named.log"), encoding: .utf8)) ?? ""
    }

    /// BIND logs `transfer of 'zone/IN': IXFR started: TSIG key (serial A -> B)`; an IXFR it answers
    /// in AXFR form says `AXFR-style IXFR started` instead and is not counted.
    package var outgoingIXFRCount: Int {
        log.split(separator: "\n").filter { $0.contains(": IXFR started") }.count
    }

    /// Sends one UPDATE with `nsupdate`: `unset` lines deleted, then `set` lines added (`owner ttl
    /// TYPE data`, owner relative to the zone, `@` the apex); BIND raises the serial and sends its NOTIFY.
    ///
    /// - Returns: when `nsupdate` was started.
    @discardableResult
    package func change(set: [String] = [], unset: [String] = []) throws -> ContinuousClock.Instant {
        try change(view: nil, set: set, unset: unset)
    }

    /// ``change(set:unset:)`` in `view` (signed with its key, which selects it), or the default view.
    @discardableResult
    package func change(view: String?, set: [String] = [], unset: [String] = []) throws -> ContinuousClock.Instant {
        let views = settings.withLock { $0.views }
        var key = "hmac-sha256:\(keyName):\(keySecret)"
        if let view {
            guard let found = views.first(where: { $0.name == view }) else { throw Failure(description: "no view \(view)") }
            key = "hmac-sha256:\(found.keyName):\(found.keySecret)"
        }
        func absolute(_ line: String) -> String {
            var fields = line.split(separator: " ").map(String.init)
            if let owner = fields.first { fields[0] = owner == "@" ? "\(zone)." : "\(owner).\(zone)." }
            return fields.joined(separator: " ")
        }
        let script = (["server 127.0.0.1 \(port)", "zone \(zone)"] + unset.map { "update delete " + absolute($0) }
            + set.map { "update add " + absolute($0) } + ["send", ""]).joined(separator: "\n")
        let path = directory.appendingPathComponent("update-\(UUID().uuidString).txt")
        try script.write(to: path, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: path) }
        let started = ContinuousClock.now
        let tool = try RunningTool(
            executable: URL(fileURLWithPath: Self.nsupdate), arguments: ["-y", key, "-t", "10", path.path])
        let status = try tool.wait(timeout: .seconds(30))
        guard status == 0 else {
            throw Failure(description: "nsupdate exited \(status): \(String(decoding: tool.stdout + tool.stderr, as: UTF8.self))\n\(script)")
        }
        return started
    }

    /// Rewrites `also-notify` and has named reload its configuration (SIGHUP).
    package func reconfigure(notify ports: [UInt16]) throws {
        let settings = self.settings.withLock { settings in
            settings.notify = ports
            return settings
        }
        try Self.writeConfig(zone: zone, port: port, keyName: keyName, settings, directory: directory)
        let reloads = { self.log.components(separatedBy: "reloading configuration succeeded").count }
        let before = reloads()
        guard let running = process.withLock({ $0 }) else { throw Failure(description: "named was stopped") }
        running.send(SIGHUP)
        let reloaded = pollUntilBlocking(within: .seconds(15), every: .milliseconds(20)) {
            if log.contains("reloading configuration failed") { return true }
            return reloads() > before
        }
        guard reloaded, !log.contains("reloading configuration failed") else {
            throw Failure(description: "named did not reload its configuration: \(log)")
        }
    }

    /// Stops named, writes a zone file of `serial` and `records`, deletes the journal and starts named
    /// again on the same port.
    package func restart(serial: UInt32, records: [String]) throws {
        try restart(serial: serial, records: records, keySecret: nil)
    }

    /// ``restart(serial:records:)``, with a new key secret when `keySecret` is given (a key rolled
    /// over on the primary but not yet on its secondaries).
    package func restart(serial: UInt32, records: [String], keySecret: String?) throws {
        let settings = self.settings.withLock { settings in
            if let keySecret { settings.secret = keySecret }
            return settings
        }
        guard let old = process.withLock({ $0.take() }) else { throw Failure(description: "named was stopped") }
        _ = old.stop(timeout: .seconds(5))
        try? FileManager.default.removeItem(at: directory.appendingPathComponent("\(zone).zone.jnl"))
        try Self.writeZone(zone: zone, serial: serial, records: records, settings, directory: directory)
        var lastError: (any Error)?
        for _ in 0..<5 {
            do {
                let running = try Self.launch(zone: zone, port: port, keyName: keyName, settings, directory: directory)
                process.withLock { $0 = running }
                return
            } catch {
                lastError = error
                usleep(200_000)
            }
        }
        throw lastError ?? Failure(description: "named did not start again")
    }

    private static func writeZone(zone: String, serial: UInt32, records: [String], _ settings: Settings, directory: URL) throws {
        let text = zoneFile(zone: zone, serial: serial, refresh: settings.refresh, retry: settings.retry, expire: settings.expire, records: records)
        try text.write(to: directory.appendingPathComponent("\(zone).zone"), atomically: true, encoding: .utf8)
        for view in settings.views {
            let text = zoneFile(zone: zone, serial: serial, refresh: settings.refresh, retry: settings.retry, expire: settings.expire, records: view.records)
            try text.write(to: directory.appendingPathComponent("\(zone).\(view.name).zone"), atomically: true, encoding: .utf8)
        }
    }

    /// `notify explicit`: NOTIFY goes to `also-notify` only, not to the zone's NS (ns1, which is no
    /// server). `notify-delay 0`: BIND's default holds a zone's next NOTIFY 5 s after the last one, and
    /// a test's changes come faster. `notify-rate 1000`: at the default 20 a second BIND's rate limiter
    /// sends the first NOTIFY of a change at once and the rest in ticks of 10 every 500 ms, so every
    /// secondary but the first heard of each change half a second late (measured: 530 ms against
    /// 35 ms). `max-ixfr-ratio unlimited`: by default BIND answers an IXFR in AXFR form when the
    /// increments outweigh the zone (always, in a test's small zone). `ixfr-from-differences` is
    /// for edits of the zone file (this zone changes by UPDATE, journaled anyway): there as in the
    /// configuration httpdns-serve(8) shows, which this one is.
    private static func writeConfig(zone: String, port: UInt16, keyName: String, _ settings: Settings, directory: URL) throws {
        func alsoNotify(_ keyName: String) -> String {
            settings.notify.isEmpty ? "" : "also-notify { \(settings.notify.map { "127.0.0.1 port \($0) key \"\(keyName)\"; " }.joined())};"
        }
        func zoneClause(file: String, keyName: String) -> String {
            """
            zone "\(zone)" {
                type primary;
                file "\(file)";
                allow-transfer { key "\(keyName)"; };
                allow-update { key "\(keyName)"; };
                \(alsoNotify(keyName))
                ixfr-from-differences yes;
            };
            """
        }
        // With views every zone is in one; the views are matched in order, the zone's key last (any).
        let zones = settings.views.isEmpty ? zoneClause(file: "\(zone).zone", keyName: keyName)
            : (settings.views.map { view in
                "view \"\(view.name)\" { match-clients { key \"\(view.keyName)\"; }; \(zoneClause(file: "\(zone).\(view.name).zone", keyName: view.keyName)) };"
            } + ["view \"default\" { match-clients { any; }; \(zoneClause(file: "\(zone).zone", keyName: keyName)) };"]).joined(separator: "\n")
        let keys = settings.views.map { "key \"\($0.keyName)\" { algorithm hmac-sha256; secret \"\($0.keySecret)\"; };" }.joined(separator: "\n")
        let config = """
            key "\(keyName)" { algorithm hmac-sha256; secret "\(settings.secret)"; };
            \(keys)
            controls { };
            options {
                directory "\(directory.path)";
                pid-file none;
                session-keyfile none;
                listen-on port \(port) { 127.0.0.1; };
                listen-on-v6 { none; };
                recursion no;
                dnssec-validation no;
                notify explicit;
                notify-delay 0;
                notify-rate 1000;
                max-ixfr-ratio unlimited;
            };
            \(zones)

            """
        try config.write(to: directory.appendingPathComponent("named.conf"), atomically: true, encoding: .utf8)
    }

    private static func launch(zone: String, port: UInt16, keyName: String, _ settings: Settings, directory: URL) throws -> ChildProcess {
        try writeConfig(zone: zone, port: port, keyName: keyName, settings, directory: directory)
        let configPath = directory.appendingPathComponent("named.conf")
        let logPath = directory.appendingPathComponent("named.log")
        // The log is shared by restarts: only what this run wrote says whether it has loaded.
        let start = ((try? FileManager.default.attributesOfItem(atPath: logPath.path)[.size]) as? Int) ?? 0
        func thisRun() -> String {
            let data = (try? Data(contentsOf: logPath)) ?? Data()
            return String(decoding: data.dropFirst(start), as: UTF8.self)
        }
        // -g: foreground, log to stderr; -4: IPv4 only; -n 1: one worker thread (a test's zone is tiny).
        let process = try ChildProcess(
            executable: named, arguments: ["-g", "-4", "-n", "1", "-c", configPath.path], output: logPath, stopTimeout: .seconds(5))
        let deadline = ContinuousClock.now + .seconds(15)
        while ContinuousClock.now < deadline {
            let text = thisRun()
            // named does not exit when it cannot bind its port: it logs and runs on, answering nothing.
            guard process.isRunning, !text.contains("could not listen on") else {
                _ = process.stop(timeout: nil)
                throw Failure(description: "named did not start on 127.0.0.1:\(port): \(text)")
            }
            let running = text.split(separator: "\n").contains { $0.hasSuffix(" running") }
            // `zone example.test/IN: loaded serial 1`, or `zone example.test/IN/VIEW: …` with views.
            let loaded = text.split(separator: "\n").filter { $0.contains("zone \(zone)/IN") && $0.contains(": loaded serial") }.count
            if running, loaded >= settings.views.count + 1, KnotServer.accepts(port: port) { return process }
            usleep(20_000)
        }
        _ = process.stop(timeout: nil)
        throw Failure(description: "named did not load \(zone) on 127.0.0.1:\(port) within 15 s: \(thisRun())")
    }
}
