import Foundation
import HTTPDNSCore

/// A real dnsdist (Debian `dnsdist`, 1.7 or newer) on 127.0.0.1 in front of one backend, with a
/// DNS-over-TLS frontend (`addTLSLocal`, RFC 7858) and its web API on loopback, for tests: what
/// Unbound and systemd-resolved users point a DoT client at. No security polling (it would query the
/// network). Idle client connections are closed after ``Configuration/idleTimeout``. The process is stopped by ``stop()`` or
/// when the value is released.
package final class Dnsdist: Sendable {
    /// The backend and the TLS frontend's certificate.
    package struct Configuration: Sendable {
        /// Where queries go (a dnsmasq on loopback).
        package var backendAddress: HTTPDNSIPAddress
        package var backendPort: UInt16
        /// A name the backend answers: dnsdist's health check asks it (`checkName`).
        package var checkName: String
        /// The frontend's certificate chain and key (PEM files).
        package var certificatePath: String
        package var keyPath: String
        /// Where dnsdist lives. Default `/usr/bin/dnsdist`.
        package var executable: String = "/usr/bin/dnsdist"
        /// How long to wait for its first answer. Default 10 s.
        package var startTimeout: Duration = .seconds(10)
        /// How long a client's connection may stay idle before dnsdist closes it, in whole seconds
        /// (`setTCPRecvTimeout`). Default 3 s (dnsdist's own is 2 s): long enough that a test's burst
        /// and its next query share a connection even under a sanitizer.
        package var idleTimeout: Int = 3

        package init(backendAddress: HTTPDNSIPAddress, backendPort: UInt16, checkName: String, certificatePath: String, keyPath: String) {
            self.backendAddress = backendAddress
            self.backendPort = backendPort
            self.checkName = checkName
            self.certificatePath = certificatePath
            self.keyPath = keyPath
        }
    }

    /// The plain DNS port (UDP and TCP).
    package let port: UInt16
    /// The DNS-over-TLS port.
    package let tlsPort: UInt16
    /// The web API's port (`X-API-Key: ` ``apiKey``).
    package let webPort: UInt16
    package static let apiKey = "httpdns-test"
    /// The temporary directory with the config file and dnsdist's output.
    package let directory: URL
    private let process: HTTPDNSLock<ChildProcess?>

    /// Starts dnsdist and waits until it answers on its plain port.
    /// - Throws: ``Dnsmasq/Failure`` when dnsdist is not installed (naming the apt package), exits at
    ///   start (with its output), or does not answer in time.
    package init(_ configuration: Configuration) throws {
        guard FileManager.default.isExecutableFile(atPath: configuration.executable) else {
            throw Dnsmasq.Failure(description: "dnsdist not found at \(configuration.executable): install the Debian package dnsdist (scripts/ensure-deps.sh)")
        }
        let workDirectory = FileManager.default.temporaryDirectory.appendingPathComponent("httpdns-dnsdist-\(UUID().uuidString)")
        directory = workDirectory
        try FileManager.default.createDirectory(at: workDirectory, withIntermediateDirectories: true)
        let loopback = HTTPDNSIPAddress("127.0.0.1")!
        do {
            let started = try Dnsmasq.onFreePort(loopback) { port -> (UInt16, UInt16, ChildProcess) in
                let tlsPort = try Dnsmasq.freePort(on: loopback)
                let webPort = try Dnsmasq.freePort(on: loopback)
                guard Set([port, tlsPort, webPort]).count == 3 else { throw Dnsmasq.Failure(description: "the same free port twice") }
                return (tlsPort, webPort, try Self.launch(configuration, ports: (port, tlsPort, webPort), directory: workDirectory))
            }
            port = started.port
            (tlsPort, webPort) = (started.value.0, started.value.1)
            process = HTTPDNSLock(started.value.2)
        } catch {
            try? FileManager.default.removeItem(at: workDirectory)
            throw error
        }
    }

    deinit {
        stop()
    }

    /// Stops dnsdist (SIGTERM, then waits for it) and removes its files. Safe to call twice.
    package func stop() {
        guard let running = process.withLock({ $0.take() }) else { return }
        running.stop(timeout: .seconds(5))
        try? FileManager.default.removeItem(at: directory)
    }

    /// What dnsdist has printed so far.
    package var log: String {
        (try? String(contentsOf: directory.appendingPathComponent("dnsdist.log"), encoding: .utf8)) ?? ""
    }

    /// The DNS-over-TLS frontend's counters from the web API (`queries`, `tlsNewSessions`: one per
    /// full handshake, `tcpMaxConcurrentConnections`, …).
    package func tlsFrontend() throws -> [String: Any] {
        let client = try RawHTTPClient(port: Int(webPort))
        // HTTP/1.0: dnsdist answers 1.1 requests chunked; a 1.0 answer is the body up to the close.
        guard client.send("GET /api/v1/servers/localhost HTTP/1.0\r\nHost: 127.0.0.1\r\nX-API-Key: \(Self.apiKey)\r\n\r\n") else {
            throw Dnsmasq.Failure(description: "dnsdist's API did not take the request")
        }
        let text = String(decoding: client.readAll(timeout: 5).data, as: UTF8.self)
        guard text.hasPrefix("HTTP/1.0 200 "), let split = text.range(of: "\r\n\r\n"),
              let object = try JSONSerialization.jsonObject(with: Data(text[split.upperBound...].utf8)) as? [String: Any],
              let frontends = object["frontends"] as? [[String: Any]],
              let frontend = frontends.first(where: { ($0["address"] as? String) == "127.0.0.1:\(tlsPort)" && ($0["tcp"] as? Bool) == true })
        else {
            throw Dnsmasq.Failure(description: "dnsdist's API answered: \(text.prefix(300))")
        }
        return frontend
    }

    static func launch(_ configuration: Configuration, ports: (plain: UInt16, tls: UInt16, web: UInt16), directory: URL) throws -> ChildProcess {
        let configPath = directory.appendingPathComponent("dnsdist.conf")
        try """
            setSecurityPollSuffix("")
            setLocal("127.0.0.1:\(ports.plain)")
            -- A client's idle connection is closed after this many seconds (2 by default).
            setTCPRecvTimeout(\(max(1, configuration.idleTimeout)))
            -- maxInFlight: the queries of one connection are read as they come and answered in any
            -- order (RFC 7766 §6.2.1.1). Without it dnsdist 1.7 takes one query per read of the
            -- socket: a second query already in its TLS buffer waits for the next bytes to arrive.
            addTLSLocal("127.0.0.1:\(ports.tls)", "\(configuration.certificatePath)", "\(configuration.keyPath)", {provider="openssl", maxInFlight=64})
            newServer({address="\(configuration.backendAddress.uriText):\(configuration.backendPort)", checkName="\(configuration.checkName)."})
            webserver("127.0.0.1:\(ports.web)")
            setWebserverConfig({apiKey="\(apiKey)", acl="127.0.0.0/8"})
            """.write(to: configPath, atomically: true, encoding: .utf8)
        let logPath = directory.appendingPathComponent("dnsdist.log")
        let process = try ChildProcess(
            executable: configuration.executable, arguments: ["--supervised", "--disable-syslog", "-C", configPath.path],
            output: logPath, stopTimeout: .seconds(5))
        let deadline = ContinuousClock.now + configuration.startTimeout
        let loopback = HTTPDNSIPAddress("127.0.0.1")!
        while ContinuousClock.now < deadline {
            guard process.isRunning else {
                process.stop(timeout: nil)
                throw Dnsmasq.Failure(description: "dnsdist exited at start: \((try? String(contentsOf: logPath, encoding: .utf8)) ?? "")")
            }
            if Dnsmasq.answers(loopback, port: ports.plain) { return process }
        }
        process.stop(timeout: nil)
        throw Dnsmasq.Failure(description: "dnsdist on 127.0.0.1:\(ports.plain) did not answer within \(configuration.startTimeout)")
    }
}
