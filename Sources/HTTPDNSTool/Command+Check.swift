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
                With --allow-private (or --strict) a disagreement IS counted as hijacking: --allow-private says \
                private and loopback answers are legitimate on this network (an intranet or a loopback test \
                bed), which removes the bogon test, so the answer of the trusted HTTPDNS side is the only \
                reference left and any LocalDNS answer that shares no address with it is treated as forged.
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
        let strict = parsed.flag("strict") || options.allowPrivate
        let transport = HTTPTransport()
        let trust = try options.makeTrust(command: command)
        let engine = try options.makeEngine(transport: transport, trust: trust, command: command)
        var prober: CheckProbe?
        if let text = parsed.last("probe-port") {
            guard let port = Int(text), (1...65_535).contains(port) else {
                throw UsageError("bad --probe-port '\(text)': expected 1-65535", command: command)
            }
            prober = CheckProbe(port: port, transport: transport, trust: trust)
        }

        let reports = await withTaskGroup(of: (Int, HTTPDNSHijackReport).self) { group in
            for (index, host) in hosts.enumerated() {
                group.addTask { (index, await engine.checkHijack(host, family: options.family)) }
            }
            var reports = [HTTPDNSHijackReport?](repeating: nil, count: hosts.count)
            for await (index, report) in group { reports[index] = report }
            return reports.compactMap { $0 }
        }

        var hijacked = false
        var inconclusive = false
        for report in reports {
            let probe = await prober?.run(report)
            let isHijack = isHijack(report, strict: strict, probe: probe)
            hijacked = hijacked || isHijack
            if options.json {
                try Output.line(try json(report, hijack: isHijack, probe: probe))
            } else {
                try Output.line(human(report, hijack: isHijack, strict: strict, probe: probe))
            }
            if report.verdict == .inconclusive {
                inconclusive = true
                Output.error("cannot check \(report.host): HTTPDNS gave no answer (\(report.httpdns.error ?? "no address"))")
            }
        }
        if hijacked { return ExitStatus.hijacked }
        return inconclusive ? ExitStatus.failure : ExitStatus.success
    }

    /// The tool's rule: the report's own verdict, plus `disagree` when strict (see the help text).
    /// With a probe: a confirmed hijack counts; a LocalDNS address that verifies clears a disagreement.
    static func isHijack(_ report: HTTPDNSHijackReport, strict: Bool, probe: CheckProbe.Result? = nil) -> Bool {
        if report.verdict.isHijack || probe?.confirmsHijack == true { return true }
        if report.verdict == .disagree, probe?.clearsLocal == true { return false }
        return strict && report.verdict == .disagree
    }

    static func human(_ report: HTTPDNSHijackReport, hijack: Bool, strict: Bool, probe: CheckProbe.Result? = nil) -> String {
        func side(_ label: String, _ side: HTTPDNSHijackReport.Side) -> String {
            var line = "  \(label) (\(side.source)): "
            if side.addresses.isEmpty {
                line += "no address"
                if let error = side.error { line += " — \(error)" }
            } else {
                line += side.addresses.map(\.description).joined(separator: ", ")
                if let ttl = side.ttl { line += "  ttl=\(ttl)" }
            }
            return line
        }
        var lines = [report.host + ":", side("LocalDNS", report.local), side("HTTPDNS ", report.httpdns)]
        if !report.localBogons.isEmpty {
            lines.append("  bogons from LocalDNS: " + report.localBogons.map(\.description).joined(separator: ", "))
        }
        if let probe {
            if let local = probe.local {
                lines.append("  probe LocalDNS \(local.address.uriText):\(probe.port): \(local.outcome.text)")
            }
            if let httpdns = probe.httpdns {
                lines.append("  probe HTTPDNS  \(httpdns.address.uriText):\(probe.port): \(httpdns.outcome.text)")
            }
        }
        var verdict = "  verdict: \(report.verdict.rawValue) — \(report.summary)"
        if probe?.confirmsHijack == true, !report.verdict.isHijack {
            verdict += "; confirmed by connecting: LocalDNS's address cannot prove it is \(report.host)"
        } else if report.verdict == .disagree, probe?.clearsLocal == true {
            verdict += "; LocalDNS's address presents a valid certificate for \(report.host): a different edge, not hijacking"
        } else if hijack, !report.verdict.isHijack {
            verdict += "; counted as hijacking because private answers are allowed (--allow-private) or --strict"
        }
        lines.append(verdict)
        lines.append(hijack ? "  HIJACKED" : (report.verdict == .inconclusive ? "  INCONCLUSIVE" : "  OK"))
        return lines.joined(separator: "\n")
    }

    /// The report object (its Codable form) plus `"hijack"`, the tool's conclusion, on one line.
    static func json(_ report: HTTPDNSHijackReport, hijack: Bool, probe: CheckProbe.Result? = nil) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let data = try encoder.encode(report)
        guard var object = try JSONSerialization.jsonObject(with: data) as? [String: Any] else {
            throw ToolFailure("cannot encode the report as JSON")
        }
        object["hijack"] = hijack
        if let probe {
            var probeObject: [String: Any] = ["port": probe.port, "confirmsHijack": probe.confirmsHijack]
            if let local = probe.local {
                probeObject["local"] = ["address": local.address.description, "result": local.outcome.jsonValue, "detail": local.outcome.text]
            }
            if let httpdns = probe.httpdns {
                probeObject["httpdns"] = ["address": httpdns.address.description, "result": httpdns.outcome.jsonValue, "detail": httpdns.outcome.text]
            }
            object["probe"] = probeObject
        }
        let line = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])
        return String(decoding: line, as: UTF8.self)
    }
}
