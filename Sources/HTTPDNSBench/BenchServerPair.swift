import Foundation
import HTTPDNSCore
import HTTPDNSTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// Row 8's servers, each a child process on 127.0.0.1: dnsdist with a plain and a TLS DoH frontend
/// in one process, and two `httpdns serve` processes (plain, TLS) with one `--listen` each, so the
/// command line works with every version of `serve`. With `dot`, row 12's instead: dnsdist's DoT
/// frontend and a `serve` with one `tls://` listener. Stopped with SIGTERM (SIGKILL after 5 s).
final class BenchServerPair: @unchecked Sendable {
    /// Where one server listens, and the process whose CPU time is read.
    struct Target {
        var name: String
        var url: String
        var pid: Int32
    }

    private var processes: [(name: String, process: Process, log: URL)] = []
    private var ports: [String: UInt16] = [:]

    init(httpdns: String, directory: URL, certificatePath: String, keyPath: String, dot: Bool = false) throws {
        let loopback = HTTPDNSIPAddress("127.0.0.1")!
        let listeners = dot ? ["dnsdist-dot", "httpdns-dot"] : ["dnsdist-plain", "dnsdist-tls", "httpdns-plain", "httpdns-tls"]
        for key in ["dnsdist-dns"] + listeners {
            ports[key] = try Dnsmasq.freePort(on: loopback)
        }
        do {
            let zone = directory.appendingPathComponent("bench-zone.json")
            try #"{"\#(ServerBench.name)": {"A": ["192.0.2.1"], "ttl": 300}}"#.write(to: zone, atomically: true, encoding: .utf8)
            // dnsdist answers the same name from a rule; no backend (nothing else is ever asked), no
            // security polling (it would query the network), its plain DNS listener on a free port.
            let config = directory.appendingPathComponent("dnsdist.conf")
            let frontends = dot
                ? """
                    addTLSLocal("127.0.0.1:\(ports["dnsdist-dot"]!)", "\(certificatePath)", "\(keyPath)", {provider="openssl"})
                    """
                : """
                    addDOHLocal("127.0.0.1:\(ports["dnsdist-tls"]!)", "\(certificatePath)", "\(keyPath)", "/dns-query")
                    addDOHLocal("127.0.0.1:\(ports["dnsdist-plain"]!)", nil, nil, "/dns-query")
                    """
            try """
                setSecurityPollSuffix("")
                setLocal("127.0.0.1:\(ports["dnsdist-dns"]!)")
                \(frontends)
                addAction(QNameRule("\(ServerBench.name)."), SpoofAction({"192.0.2.1"}, {ttl=300}))
                """.write(to: config, atomically: true, encoding: .utf8)
            try start("dnsdist", ServerBench.dnsdist, ["--supervised", "--disable-syslog", "-C", config.path], directory)
            let tls = ["--tls-cert", certificatePath, "--tls-key", keyPath]
            if dot {
                try start("httpdns-dot", httpdns, ["serve", "--listen", "tls://127.0.0.1:\(ports["httpdns-dot"]!)", "--zone", zone.path] + tls, directory)
            } else {
                try start("httpdns-plain", httpdns, ["serve", "--listen", "127.0.0.1:\(ports["httpdns-plain"]!)", "--zone", zone.path], directory)
                try start("httpdns-tls", httpdns, ["serve", "--listen", "127.0.0.1:\(ports["httpdns-tls"]!)", "--zone", zone.path] + tls, directory)
            }
            for key in listeners {
                try waitForListener(ports[key]!, name: key)
            }
        } catch {
            stop()
            throw error
        }
    }

    func dnsdistTarget(tls: Bool) -> Target {
        Target(name: "dnsdist", url: url(tls: tls, port: ports[tls ? "dnsdist-tls" : "dnsdist-plain"]!), pid: pid("dnsdist"))
    }

    func httpdnsTarget(tls: Bool) -> Target {
        let key = tls ? "httpdns-tls" : "httpdns-plain"
        return Target(name: "httpdns serve", url: url(tls: tls, port: ports[key]!), pid: pid(key))
    }

    /// Row 12's DoT listeners (`dot`): dnsdist's and `serve`'s, with their ports.
    func dotTargets() -> (dnsdist: StubBenchServers.Target, httpdns: StubBenchServers.Target) {
        (StubBenchServers.Target(name: "dnsdist", port: ports["dnsdist-dot"]!, pid: pid("dnsdist")),
         StubBenchServers.Target(name: "httpdns serve", port: ports["httpdns-dot"]!, pid: pid("httpdns-dot")))
    }

    func stop() {
        for entry in processes where entry.process.isRunning {
            entry.process.terminate()
        }
        let giveUp = Date().addingTimeInterval(5)
        for entry in processes {
            while entry.process.isRunning, Date() < giveUp { usleep(20_000) }
            if entry.process.isRunning { kill(entry.process.processIdentifier, SIGKILL) }
        }
        processes = []
    }

    private func url(tls: Bool, port: UInt16) -> String {
        "\(tls ? "https" : "http")://127.0.0.1:\(port)"
    }

    private func pid(_ name: String) -> Int32 {
        processes.first { $0.name == name }?.process.processIdentifier ?? -1
    }

    private func start(_ name: String, _ executable: String, _ arguments: [String], _ directory: URL) throws {
        let log = directory.appendingPathComponent("\(name).log")
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        let handle = try FileHandle(forWritingTo: log)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.standardOutput = handle
        process.standardError = handle
        try process.run()
        processes.append((name, process, log))
    }

    /// Waits until `port` accepts a TCP connection (or its process died).
    private func waitForListener(_ port: UInt16, name: String) throws {
        let owner = name.hasPrefix("dnsdist") ? "dnsdist" : name
        let giveUp = Date().addingTimeInterval(15)
        while Date() < giveUp {
            if let entry = processes.first(where: { $0.name == owner }), !entry.process.isRunning {
                let text = (try? String(contentsOf: entry.log, encoding: .utf8)) ?? ""
                throw BenchFailure("\(owner) exited with \(entry.process.terminationStatus): \(text.suffix(400))")
            }
            if BenchTCPSink.accepts(port: port) { return }
            usleep(50_000)
        }
        throw BenchFailure("\(name) did not listen on 127.0.0.1:\(port) within 15 s")
    }
}
