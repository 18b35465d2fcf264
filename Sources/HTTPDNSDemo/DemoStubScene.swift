#if canImport(Glibc)
import Glibc
#endif
import Foundation
import HTTPDNSCore
import HTTPDNSTestSupport

/// The stub scene (issue 23): `getent hosts`, `dig` and `curl`, with no proxy and no library,
/// resolve through `httpdns stub` and reach the real site while the carrier's resolver (the demo's
/// lying dnsmasq, also the stub's upstream for names it does not protect) still lies.
///
/// Those programs read /etc/resolv.conf, which the demo must not change on the host: as root they
/// run in a private mount namespace (`unshare --mount`) where a resolv.conf naming the stub, and an
/// nsswitch.conf whose `hosts` line is `files dns`, are bind-mounted over the host's; nothing else
/// changes and everything stays on loopback. Without root, only `dig @stub` is shown.
enum DemoStubScene {
    /// The stub's address: the demo's next loopback address, not the default 127.0.0.153, so that a
    /// stub the host already runs is left alone.
    static let address = HTTPDNSIPAddress("127.0.0.6")!

    static func run(bed: DemoBed, cleanup: DemoCleanup) {
        let tool = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
            .deletingLastPathComponent().appendingPathComponent("httpdns")
        let programs = ["/usr/bin/getent", "/usr/bin/dig", "/usr/bin/curl", "/usr/bin/unshare"]
        guard FileManager.default.isExecutableFile(atPath: tool.path), programs.allSatisfy(FileManager.default.isExecutableFile(atPath:)) else {
            DemoOutput.line("(stub scene skipped: needs the httpdns binary next to httpdns-demo, and \(programs.joined(separator: ", ")))\n")
            return
        }
        let carrier = "udp=\(bed.dnsmasq.address):\(bed.dnsmasq.port)"
        func start(port: Int) throws -> (RunningTool, String) {
            let stub = try RunningTool(executable: tool, arguments: [
                "stub", "--listen", "\(address):\(port)", "--provider", "dnspod=\(bed.httpdnsURL)", "--allow-private",
                "--protect", "*.demo.test", "--upstream", carrier,
            ])
            cleanup.add { stub.send(SIGTERM) }
            let line = try stub.waitForLine(startingWith: "listening on ", timeout: .seconds(10))
            return (stub, String(line.split(separator: ":").last ?? ""))
        }
        // resolv.conf can only name port 53, and binding it needs root (as does the mount namespace);
        // when port 53 is taken (a server bound to every address), a free port and dig @stub only.
        var root = geteuid() == 0
        let stub: RunningTool
        let port: String
        do {
            if root, let started = try? start(port: 53) {
                (stub, port) = started
            } else {
                root = false
                (stub, port) = try start(port: 0)
            }
        } catch {
            return DemoOutput.error("cannot start httpdns stub: \(error)")
        }
        let site = "https://\(DemoBed.secureHosts[0]):\(bed.httpsPort)/"
        let news = "http://\(DemoBed.plainHost):\(bed.httpPort)/"
        var lines = [
            "httpdns stub — programs with no proxy and no library, through the host's resolver",
            "  $ httpdns stub --listen \(address):\(port) --provider dnspod=\(bed.httpdnsURL) --protect '*.demo.test' --upstream \(carrier)",
            "  the carrier's resolver:  $ dig @\(bed.dnsmasq.address) -p \(bed.dnsmasq.port) +short \(DemoBed.secureHosts[0])",
            "    " + run("/usr/bin/dig", ["@\(bed.dnsmasq.address)", "-p", "\(bed.dnsmasq.port)", "+short", "+time=2", "+tries=1", DemoBed.secureHosts[0]]),
        ]
        if root, let files = try? namespaceFiles(bed) {
            lines.append("  with resolv.conf \"nameserver \(address)\" (a private mount namespace; the host's file is untouched):")
            for (shown, program, arguments) in [
                ("getent hosts \(DemoBed.secureHosts[0])", "/usr/bin/getent", ["hosts", DemoBed.secureHosts[0]]),
                ("dig +short \(DemoBed.secureHosts[0])", "/usr/bin/dig", ["+short", "+time=2", "+tries=1", DemoBed.secureHosts[0]]),
                ("curl --cacert demo-ca.pem \(site)", "/usr/bin/curl", ["-sS", "--max-time", "10", "--cacert", bed.certificates.caCertificatePath, site]),
                ("curl \(news)", "/usr/bin/curl", ["-sS", "--max-time", "10", news]),
                ("httpdns stub --check --listen \(address):53", tool.path, ["stub", "--check", "--listen", "\(address):53"]),
            ] {
                lines.append("  $ \(shown)")
                lines.append("    " + run("/usr/bin/unshare", ["--mount", "--propagation", "private", "/bin/sh", "-c", files.script] + files.arguments + [program] + arguments))
            }
            lines.append("""
                  => getent (glibc), dig and curl asked the stub through resolv.conf: it answered the protected names \
                from HTTPDNS (\(DemoBed.origin)), not the carrier's \(DemoBed.hijacker).
                """)
        } else {
            lines.append("  (not root, or port 53 taken: the demo cannot give programs a resolv.conf naming the stub, so only dig @stub is shown)")
            lines.append("  $ dig @\(address) -p \(port) +short \(DemoBed.secureHosts[0])")
            lines.append("    " + run("/usr/bin/dig", ["@\(address)", "-p", port, "+short", "+time=2", "+tries=1", DemoBed.secureHosts[0]]))
        }
        DemoOutput.line(lines.joined(separator: "\n") + "\n")
        stub.send(SIGTERM)
        _ = try? stub.wait(timeout: .seconds(10))
    }

    /// A resolv.conf naming the stub and an nsswitch.conf resolving hosts through `files dns` (an
    /// `nss-resolve` line would ask systemd-resolved and bypass resolv.conf), and the shell script
    /// that bind-mounts them over /etc's and runs the program (`$0`, `$1` are the two files).
    static func namespaceFiles(_ bed: DemoBed) throws -> (script: String, arguments: [String]) {
        let resolv = bed.certificates.directory.appendingPathComponent("resolv.conf")
        try "nameserver \(address)\noptions timeout:2 attempts:1\n".write(to: resolv, atomically: true, encoding: .utf8)
        let host = (try? String(contentsOfFile: "/etc/nsswitch.conf", encoding: .utf8)) ?? ""
        let nsswitch = bed.certificates.directory.appendingPathComponent("nsswitch.conf")
        let kept = host.split(separator: "\n").filter { !$0.hasPrefix("hosts:") }.joined(separator: "\n")
        try (kept + "\nhosts: files dns\n").write(to: nsswitch, atomically: true, encoding: .utf8)
        let script = #"mount --bind "$0" /etc/resolv.conf && mount --bind "$1" /etc/nsswitch.conf && shift && exec "$@""#
        return (script, [resolv.path, nsswitch.path])
    }

    /// The program's output (stdout, then stderr), trimmed and indented.
    static func run(_ program: String, _ arguments: [String]) -> String {
        guard let result = try? ToolRunner(executable: URL(fileURLWithPath: program)).run(arguments, timeout: .seconds(20)) else {
            return "(\(program) did not finish)"
        }
        let text = (result.stdoutText + result.stderrText).trimmingCharacters(in: .whitespacesAndNewlines)
        return text.replacingOccurrences(of: "\n", with: "\n    ")
    }
}
