import Foundation
import HTTPDNSCore

/// The last scene: curl, a program that knows nothing of HTTPDNS, through `httpdns proxy` (the
/// binary next to this one), under the same lying LocalDNS.
enum DemoProxyScene {
    static func run(bed: DemoBed, cleanup: DemoCleanup) {
        let tool = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
            .deletingLastPathComponent().appendingPathComponent("httpdns")
        let curl = URL(fileURLWithPath: "/usr/bin/curl")
        guard FileManager.default.isExecutableFile(atPath: tool.path), FileManager.default.isExecutableFile(atPath: curl.path) else {
            DemoOutput.line("(proxy scene skipped: needs the httpdns binary next to httpdns-demo and curl)\n")
            return
        }
        let proxy = Process()
        proxy.executableURL = tool
        proxy.arguments = [
            "proxy", "--listen", "127.0.0.1:0", "--provider", "dnspod=\(bed.httpdnsURL)",
            "--local-dns", "udp=\(bed.dnsmasq.address):\(bed.dnsmasq.port)", "--protect", "*.demo.test", "--allow-private", "-v",
        ]
        let output = Pipe()
        proxy.standardOutput = output
        let log = Pipe()
        proxy.standardError = log
        guard (try? proxy.run()) != nil else { return DemoOutput.error("cannot start httpdns proxy") }
        // Ctrl-C stops it too; the pid is signalled only while the process surely still exists.
        let running = HTTPDNSLock<pid_t?>(proxy.processIdentifier)
        cleanup.add { running.withLock { pid in if let pid { kill(pid, SIGTERM) } } }
        let url = String(decoding: output.fileHandleForReading.availableData, as: UTF8.self)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        let target = "https://\(DemoBed.secureHosts[0]):\(bed.httpsPort)/"
        let masked = url.replacingOccurrences(of: #":[0-9a-f]{32}@"#, with: ":TOKEN@", options: .regularExpression)
        DemoOutput.line("""
            \(target)  — code you do not own: plain curl through `httpdns proxy`
              $ httpdns proxy --provider dnspod=\(bed.httpdnsURL) --local-dns udp=\(bed.dnsmasq.address):\(bed.dnsmasq.port) ...
              \(masked)
              $ https_proxy=\(masked) curl --cacert demo-ca.pem \(target)
            """)
        let run = Process()
        run.executableURL = curl
        run.arguments = ["-sS", "--max-time", "10", "--cacert", bed.certificates.caCertificatePath, target]
        run.environment = ["https_proxy": url]
        let body = Pipe()
        run.standardOutput = body
        run.standardError = body
        if (try? run.run()) != nil {
            // Read to the end (curl's exit closes the pipe) rather than `waitUntilExit()`: Foundation's
            // `Process` reaps one child at a time and can wait on nginx or dnsmasq instead (seen here).
            let text = String(decoding: body.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            DemoOutput.line("  " + text.trimmingCharacters(in: .whitespacesAndNewlines).replacingOccurrences(of: "\n", with: "\n  "))
        }
        running.withLock { pid in
            proxy.terminate()
            pid = nil
        }
        let events = String(decoding: log.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        DemoOutput.line(events.split(separator: "\n").map { "  proxy: \($0)" }.joined(separator: "\n"))
        DemoOutput.line("""
              => curl resolved nothing itself: it sent CONNECT \(DemoBed.secureHosts[0]):\(bed.httpsPort), the proxy asked \
            HTTPDNS and connected to \(DemoBed.origin); TLS and its certificate check stayed curl's own.

            """)
    }
}
