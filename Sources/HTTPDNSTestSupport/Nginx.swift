#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import HTTPDNSCore

/// A real nginx (Debian `nginx-light`) serving chosen virtual hosts on loopback, for acceptance tests
/// against the server software users actually run.
///
/// The config file, pid file, logs and temp directories live in a fresh temporary directory; nginx
/// runs in the foreground (`daemon off`) as a child of the test process, workers as root when the
/// tests run as root and as the current user otherwise. ``stop()`` (or releasing the value) ends it.
package final class Nginx: Sendable {
    /// Why nginx could not be used, with a stable code.
    package struct Failure: Error, Sendable, CustomStringConvertible {
        fileprivate enum Kind: Sendable, Hashable {
            case notInstalled, invalidConfiguration, exitedAtStart, notReady, noFreePort
        }

        /// Stable codes; compare errors by code.
        package struct Code: Sendable, Hashable {
            fileprivate let kind: Kind
            /// The nginx binary is missing: install the Debian package `nginx-light`.
            package static let notInstalled = Code(kind: .notInstalled)
            /// The configuration cannot be written as an nginx config.
            package static let invalidConfiguration = Code(kind: .invalidConfiguration)
            /// nginx exited while starting (the detail holds its error log).
            package static let exitedAtStart = Code(kind: .exitedAtStart)
            /// A listener did not accept connections within the start timeout.
            package static let notReady = Code(kind: .notReady)
            /// No port was free on every listen address.
            package static let noFreePort = Code(kind: .noFreePort)
        }

        package var code: Code
        /// What happened, for the test log.
        package var detail: String

        package init(_ code: Code, _ detail: String) {
            self.code = code
            self.detail = detail
        }

        package var description: String { "nginx: \(detail)" }
    }

    /// The port shared by every TLS virtual host (nil when there is none).
    package let httpsPort: UInt16?
    /// The port shared by every plain-HTTP virtual host (nil when there is none).
    package let httpPort: UInt16?
    /// The temporary directory with `nginx.conf`, the logs and nginx's temp files.
    package let directory: URL
    private let process: ChildProcess

    /// Writes the config, starts nginx and waits until every listener accepts connections.
    ///
    /// - Throws: ``Failure``: `.notInstalled` naming the apt package, `.invalidConfiguration`,
    ///   `.exitedAtStart` with nginx's error log, `.notReady`, `.noFreePort`.
    package init(_ configuration: Configuration) throws(Failure) {
        guard FileManager.default.isExecutableFile(atPath: configuration.executable) else {
            throw Failure(.notInstalled, "nginx not found at \(configuration.executable): install the Debian package nginx-light (apt-get install nginx-light)")
        }
        try Self.validate(configuration)
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("httpdns-nginx-\(UUID().uuidString)")
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        } catch {
            throw Failure(.exitedAtStart, "cannot create \(directory.path): \(error)")
        }
        let listeners = Self.listeners(configuration)
        var lastError = Failure(.noFreePort, "nginx did not start")
        // A port found free can be taken before nginx binds it: try again with other ports.
        let fixedPorts = configuration.httpsPort != nil || configuration.httpPort != nil
        for _ in 0..<(fixedPorts ? 1 : 5) {
            do throws(Failure) {
                let tlsAddresses = listeners.filter(\.tls).map(\.address)
                let plainAddresses = listeners.filter { !$0.tls }.map(\.address)
                let httpsPort = try Self.port(configuration.httpsPort, on: tlsAddresses)
                let httpPort = try Self.port(configuration.httpPort, on: plainAddresses)
                let text = Self.configFile(configuration, directory: directory, httpPort: httpPort, httpsPort: httpsPort)
                let process = try Self.launch(configuration, text: text, directory: directory)
                let ready = Self.waitUntilListening(
                    listeners.map { ($0.address, $0.tls ? httpsPort! : httpPort!) }, process: process,
                    timeout: configuration.startTimeout)
                guard ready else {
                    let exited = !process.isRunning
                    process.stop(timeout: configuration.stopTimeout)
                    let log = Self.read(directory.appendingPathComponent("error.log"))
                    throw Failure(exited ? .exitedAtStart : .notReady, "nginx \(exited ? "exited at start" : "did not accept connections in time"): \(log)")
                }
                self.httpsPort = httpsPort
                self.httpPort = httpPort
                self.directory = directory
                self.process = process
                return
            } catch {
                lastError = error
                guard error.code == .exitedAtStart, error.detail.contains("in use") else { break }
            }
        }
        try? FileManager.default.removeItem(at: directory)
        throw lastError
    }

    deinit {
        stop()
    }

    /// Stops nginx (SIGTERM: fast shutdown, open transfers are cut), waits for it to exit (SIGKILL
    /// after ``Configuration/stopTimeout``), then removes its directory. Safe to call twice.
    package func stop() {
        guard process.stop(timeout: nil) else { return }
        try? FileManager.default.removeItem(at: directory)
    }

    /// What nginx logged to its error log so far (start-up problems, upstream errors).
    package var errorLog: String {
        Self.read(directory.appendingPathComponent("error.log"))
    }

    /// The requests nginx finished so far, in the order it logged them (nginx logs a request when it
    /// ends, including one cut short by the client).
    package var accessLog: [AccessLogEntry] {
        Self.read(directory.appendingPathComponent("access.log")).split(separator: "\n").compactMap(AccessLogEntry.init)
    }

    /// The access log once it holds at least `count` entries, or as it is after `timeout`.
    ///
    /// nginx writes a request's line after it has sent the response, so a client that has just read
    /// its last response can be ahead of the log: read it this way to compare it with what was sent.
    package func accessLog(atLeast count: Int, timeout: Duration = .seconds(5)) async -> [AccessLogEntry] {
        let deadline = ContinuousClock.now.advanced(by: timeout)
        while true {
            let entries = accessLog
            if entries.count >= count || ContinuousClock.now >= deadline { return entries }
            try? await Task.sleep(for: .milliseconds(10))
        }
    }

    private static func read(_ url: URL) -> String {
        (try? String(contentsOf: url, encoding: .utf8)) ?? ""
    }

    private static func launch(_ configuration: Configuration, text: String, directory: URL) throws(Failure) -> ChildProcess {
        let configPath = directory.appendingPathComponent("nginx.conf")
        let errorLog = directory.appendingPathComponent("error.log")
        do {
            try text.write(to: configPath, atomically: true, encoding: .utf8)
            try Data().write(to: errorLog)
        } catch {
            throw Failure(.exitedAtStart, "cannot write \(configPath.path): \(error)")
        }
        // `-e` sends the log of the start, before the config is read, to our file too.
        let arguments = ["-p", directory.path + "/", "-c", configPath.path, "-e", errorLog.path, "-g", "daemon off;"]
        do {
            return try ChildProcess(
                executable: configuration.executable, arguments: arguments,
                output: directory.appendingPathComponent("stderr.log"), stopTimeout: configuration.stopTimeout)
        } catch {
            throw Failure(.exitedAtStart, "cannot run \(configuration.executable): \(error)")
        }
    }

    /// Polls until a TCP connection to every listener succeeds, nginx exits, or time runs out.
    private static func waitUntilListening(_ endpoints: [(HTTPDNSIPAddress, UInt16)], process: ChildProcess, timeout: Duration) -> Bool {
        let deadline = ContinuousClock.now + timeout
        var waiting = endpoints
        while ContinuousClock.now < deadline, process.isRunning {
            waiting.removeAll { isListening($0.0, port: $0.1) }
            if waiting.isEmpty { return true }
            usleep(20_000)
        }
        return false
    }

    /// Whether a TCP connection to `address`:`port` is accepted right now.
    package static func isListening(_ address: HTTPDNSIPAddress, port: UInt16) -> Bool {
        let fd = socket(address.family == .v4 ? AF_INET : AF_INET6, Dnsmasq.socketType(datagram: false), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        return Dnsmasq.withSockAddr(address, port) { connect(fd, $0, $1) } == 0
    }

    /// `fixed`, or a free port on `addresses`; nil when there is no listener on that kind of port.
    private static func port(_ fixed: UInt16?, on addresses: [HTTPDNSIPAddress]) throws(Failure) -> UInt16? {
        guard !addresses.isEmpty else { return nil }
        if let fixed { return fixed }
        return try freePort(on: addresses)
    }

    /// A TCP port that is free on every one of `addresses` right now; nil for no addresses.
    static func freePort(on addresses: [HTTPDNSIPAddress]) throws(Failure) -> UInt16? {
        guard let first = addresses.first else { return nil }
        for _ in 0..<20 {
            guard let candidate = try? Dnsmasq.freePort(on: first) else { continue }
            let bound = addresses.dropFirst().allSatisfy { address in
                let fd = socket(address.family == .v4 ? AF_INET : AF_INET6, Dnsmasq.socketType(datagram: false), 0)
                guard fd >= 0 else { return false }
                defer { close(fd) }
                var one: Int32 = 1
                setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
                return Dnsmasq.withSockAddr(address, candidate) { bind(fd, $0, $1) } == 0
            }
            if bound { return candidate }
        }
        throw Failure(.noFreePort, "no TCP port free on all of \(addresses.map(\.description).joined(separator: ", "))")
    }
}
