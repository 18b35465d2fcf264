import Foundation
import HTTPDNSCore
import HTTPDNSTestSupport

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
        // Started with posix_spawn (the test support's runner), never Foundation's Process: its launch
        // over-reads /proc/self/fd (swift-corelibs-foundation issue 5472) and it reaps children of others.
        let proxy: RunningTool
        let url: String
        do {
            proxy = try RunningTool(executable: tool, arguments: [
                "proxy", "--listen", "127.0.0.1:0", "--provider", "dnspod=\(bed.httpdnsURL)",
                "--local-dns", "udp=\(bed.dnsmasq.address):\(bed.dnsmasq.port)", "--protect", "*.demo.test", "--allow-private", "-v",
            ])
            url = try proxy.waitForLine(startingWith: "http://", timeout: .seconds(10))
        } catch {
            return DemoOutput.error("cannot start httpdns proxy: \(error)")
        }
        // Ctrl-C stops it too.
        cleanup.add { proxy.send(SIGTERM) }
        let target = "https://\(DemoBed.secureHosts[0]):\(bed.httpsPort)/"
        let masked = url.replacingOccurrences(of: #":[0-9a-f]{32}@"#, with: ":TOKEN@", options: .regularExpression)
        DemoOutput.line("""
            \(target)  — code you do not own: plain curl through `httpdns proxy`
              $ httpdns proxy --provider dnspod=\(bed.httpdnsURL) --local-dns udp=\(bed.dnsmasq.address):\(bed.dnsmasq.port) ...
              \(masked)
              $ https_proxy=\(masked) curl --cacert demo-ca.pem \(target)
            """)
        if let result = try? ToolRunner(executable: curl).run(
            ["-sS", "--max-time", "10", "--cacert", bed.certificates.caCertificatePath, target], timeout: .seconds(15),
            environment: ["https_proxy": url])
        {
            let text = result.stdoutText + result.stderrText
            DemoOutput.line("  " + text.trimmingCharacters(in: .whitespacesAndNewlines).replacingOccurrences(of: "\n", with: "\n  "))
        }
        proxy.send(SIGTERM)
        _ = try? proxy.wait(timeout: .seconds(5))
        let events = String(decoding: proxy.stderr, as: UTF8.self)
        DemoOutput.line(events.split(separator: "\n").map { "  proxy: \($0)" }.joined(separator: "\n"))
        DemoOutput.line("""
              => curl resolved nothing itself: it sent CONNECT \(DemoBed.secureHosts[0]):\(bed.httpsPort), the proxy asked \
            HTTPDNS and connected to \(DemoBed.origin); TLS and its certificate check stayed curl's own.

            """)
    }
}
