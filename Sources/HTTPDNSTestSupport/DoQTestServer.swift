#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Foundation
import HTTPDNSCore

/// A DNS-over-QUIC server (RFC 9250) on 127.0.0.1 for tests, forwarding every query to a plain DNS
/// server on loopback: `scripts/doq-test-server.py`, over aioquic, since no Debian package serves
/// DoQ. It refuses a query that breaks RFC 9250 (ID not 0, no FIN, a wrong length) and counts
/// handshakes and queries. aioquic comes from PyPI into ``pythonDirectory`` (scripts/ensure-deps.sh
/// installs it). The process is stopped by ``stop()`` or when the value is released.
package final class DoQTestServer: Sendable {
    /// The Python environment with aioquic (`HTTPDNS_TEST_PYTHON` names another interpreter).
    package static let pythonDirectory = "/opt/httpdns-test-python"

    /// The UDP port it serves on.
    package let port: UInt16
    private let directory: URL
    private let process: HTTPDNSLock<ChildProcess?>

    /// How it answers.
    package enum Answers: String, Sendable {
        /// As RFC 9250 says.
        case normal
        /// Each answer's stream ends (FIN) half-way through the message its length prefix announces.
        case truncated
        /// A length prefix of 65,535, then more than that on the stream.
        case overlong
    }

    /// Starts the server with `certificatePath`/`keyPath` (PEM) in front of the plain DNS server on
    /// 127.0.0.1:`upstreamPort`, answering as `answers` says, and waits until it listens.
    /// - Throws: ``Dnsmasq/Failure`` when Python with aioquic is missing (saying how to install it),
    ///   or the server exits or does not listen in time (with its output).
    package init(
        certificatePath: String, keyPath: String, upstreamPort: UInt16, idleTimeout: Duration = .seconds(30), answers: Answers = .normal
    ) throws {
        let python = ProcessInfo.processInfo.environment["HTTPDNS_TEST_PYTHON"] ?? "\(Self.pythonDirectory)/bin/python3"
        guard FileManager.default.isExecutableFile(atPath: python) else {
            throw Dnsmasq.Failure(description: "\(python) not found: scripts/ensure-deps.sh makes it (a venv with aioquic from PyPI, for the DNS-over-QUIC tests)")
        }
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let script = root.appendingPathComponent("scripts/doq-test-server.py").path
        let workDirectory = FileManager.default.temporaryDirectory.appendingPathComponent("httpdns-doq-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: workDirectory, withIntermediateDirectories: true)
        directory = workDirectory
        let logPath = workDirectory.appendingPathComponent("doq.log")
        let child = try ChildProcess(
            executable: python,
            arguments: [
                script, "--certificate", certificatePath, "--key", keyPath, "--upstream-port", "\(upstreamPort)",
                "--idle-timeout", "\(idleTimeout.inSeconds)", "--answers", answers.rawValue,
            ],
            output: logPath, stopTimeout: .seconds(5))
        let deadline = ContinuousClock.now + .seconds(15)
        var found: UInt16?
        while found == nil, ContinuousClock.now < deadline {
            let text = (try? String(contentsOf: logPath, encoding: .utf8)) ?? ""
            if let line = text.split(separator: "\n").first(where: { $0.hasPrefix("listening on ") }) {
                found = line.split(separator: ":").last.flatMap { UInt16($0) }
                break
            }
            guard child.isRunning else { break }
            usleep(20_000)
        }
        guard let found else {
            child.stop(timeout: nil)
            let output = (try? String(contentsOf: logPath, encoding: .utf8)) ?? ""
            try? FileManager.default.removeItem(at: workDirectory)
            throw Dnsmasq.Failure(description: "the DoQ test server did not start: \(output.suffix(1500))")
        }
        port = found
        process = HTTPDNSLock(child)
    }

    deinit {
        stop()
    }

    /// Stops the server (SIGTERM, then waits) and removes its files. Safe to call twice.
    package func stop() {
        guard let running = process.withLock({ $0.take() }) else { return }
        running.stop(timeout: .seconds(5))
        try? FileManager.default.removeItem(at: directory)
    }

    /// Closes every open connection (CONNECTION_CLOSE with DOQ_NO_ERROR) and waits until it said so.
    package func closeConnections() throws {
        let before = lines("closed")
        process.withLock { $0?.send(SIGUSR1) }
        let deadline = ContinuousClock.now + .seconds(5)
        while lines("closed") == before {
            guard ContinuousClock.now < deadline else { throw Dnsmasq.Failure(description: "the DoQ test server did not close its connections: \(log)") }
            usleep(10_000)
        }
    }

    /// What it printed so far.
    package var log: String {
        (try? String(contentsOf: directory.appendingPathComponent("doq.log"), encoding: .utf8)) ?? ""
    }

    /// Handshakes completed so far.
    package var connections: Int { lines("connection ") }
    /// Handshakes that resumed a session from one of its tickets.
    package var resumedConnections: Int { log.split(separator: "\n").count { $0.hasPrefix("connection ") && $0.hasSuffix(" resumed") } }
    /// Queries forwarded so far.
    package var queries: Int { lines("query ") }
    /// Queries refused for breaking RFC 9250 (each closed its connection).
    package var violations: [String] { log.split(separator: "\n").filter { $0.hasPrefix("violation ") }.map(String.init) }

    private func lines(_ prefix: String) -> Int {
        log.split(separator: "\n").count { $0.hasPrefix(prefix) }
    }
}
