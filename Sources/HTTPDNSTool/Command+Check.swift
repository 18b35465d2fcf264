import Foundation
import HTTPDNS
import HTTPDNSCore
import HTTPDNSTransport

extension Command {
    static let checkHelp = HelpText(
        overview: """
            Check host names for DNS hijacking: resolve each through LocalDNS and through HTTPDNS, compare \
            the answers and print both sides with the verdict.
            """,
        usage: "httpdns check [<options>] <host> ...",
        arguments: [("<host>", "Host names to check.")],
        options: SharedOptions.specs + [
            OptionSpec("strict", help: "Count any disagreement between LocalDNS and HTTPDNS as hijacking."),
            OptionSpec("probe-port", value: "port", help: """
                Confirm by connecting: a TLS handshake for the host at LocalDNS's and at HTTPDNS's first \
                address on this port (443 for HTTPS sites). A certificate that does not verify at LocalDNS's \
                address while HTTPDNS's verifies confirms the hijack; one that verifies at both clears a \
                disagreement (a CDN edge), even with --strict. Use --cacert for private CAs.
                """),
            HelpText.helpOption,
        ],
        sections: [
            ("VERDICTS", """
                agree: the sides share an address. bogonAnswer: LocalDNS gave private, loopback or reserved \
                addresses while HTTPDNS gave public ones (hijacked). localMissing: LocalDNS gave nothing while \
                HTTPDNS has addresses (blocked). disagree: no shared address, but LocalDNS's addresses look \
                public; CDNs steer this way too, so it is not counted as hijacking by default. inconclusive: \
                HTTPDNS could not answer.
                With --strict or --allow-private a disagreement that no probe clears IS counted as hijacking \
                (--allow-private removes the bogon test, leaving HTTPDNS's answer as the only reference); the \
                verdict line says which reason applies, and --json gives it as "reason".
                """),
            ("EXIT STATUS", """
                0 no hijacking found, 2 hijacking or blocking found for any host, 1 when HTTPDNS could not \
                answer for a host (nothing to compare), 64 bad usage.
                """),
            ("EXAMPLES", """
                httpdns check www.example.com
                httpdns check --local-dns udp=192.168.1.1:53 --json www.example.com
                """),
        ])

    /// `httpdns check`.
    static func check(_ arguments: [String]) async throws -> Int32 {
        let command = "httpdns check"
        guard let parsed = try parse(arguments, command: command, help: checkHelp) else { return ExitStatus.success }
        let options = try SharedOptions(parsed, command: command)
        let hosts = parsed.positionals
        guard !hosts.isEmpty else { throw UsageError("missing <host>", command: command) }
        for host in hosts where !HTTPDNSHostPolicy.isValidHostName(host) {
            throw UsageError("'\(host)' is not a valid host name", command: command)
        }
        var settings = HTTPDNSHijackCheck(strict: parsed.flag("strict"))
        if let text = parsed.last("probe-port") {
            guard let port = Int(text), (1...65_535).contains(port) else {
                throw UsageError("bad --probe-port '\(text)': expected 1-65535", command: command)
            }
            settings.probePort = port
        }
        let check = settings
        let engine = try options.makeEngine(transport: HTTPTransport(), trust: try options.makeTrust(command: command), command: command)

        // The library checks and concludes (the same verdict `engine.checkHijack` gives an app); the
        // command prints.
        let reports = await withTaskGroup(of: (Int, HTTPDNSHijackReport).self) { group in
            for (index, host) in hosts.enumerated() {
                group.addTask { (index, await engine.checkHijack(host, family: options.family, check: check)) }
            }
            var reports = [HTTPDNSHijackReport?](repeating: nil, count: hosts.count)
            for await (index, report) in group { reports[index] = report }
            return reports.compactMap { $0 }
        }

        var hijacked = false
        var inconclusive = false
        for report in reports {
            hijacked = hijacked || report.isHijack
            if options.json {
                try Output.line(try json(report))
            } else {
                try Output.line(report.description)
            }
            if report.verdict == .inconclusive {
                inconclusive = true
                Output.error("cannot check \(report.host): HTTPDNS gave no answer (\(report.httpdns.error ?? "no address"))")
            }
        }
        if hijacked { return ExitStatus.hijacked }
        return inconclusive ? ExitStatus.failure : ExitStatus.success
    }

    /// The report (its Codable form, `"hijack"` the conclusion) on one line.
    static func json(_ report: HTTPDNSHijackReport) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(report), as: UTF8.self)
    }
}
