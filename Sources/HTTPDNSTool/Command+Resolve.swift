import HTTPDNS
import HTTPDNSCore
import HTTPDNSTransport

extension Command {
    static let resolveHelp = HelpText(
        overview: """
            Resolve host names over HTTPDNS (providers tried in order, LocalDNS as the fallback unless \
            --httpdns-only) and print the addresses with their TTL and the source that answered.
            """,
        usage: "httpdns resolve [<options>] <host> ...",
        arguments: [("<host>", "Host names to resolve (IP literals are printed as they are).")],
        options: SharedOptions.specs + [HelpText.helpOption],
        sections: [
            ("OUTPUT", """
                One line per host: HOST  ADDRESSES  ttl=N  origin=httpdns|localDNS|static  source=PROVIDER. \
                With --json one object per line: {"host","addresses","ttl","source","origin","stale"}. \
                Hosts that fail are reported on stderr, one line each.
                """),
            ("EXIT STATUS", "0 when every host resolved, 1 when any failed, 64 bad usage."),
            ("EXAMPLES", """
                httpdns resolve www.example.com
                httpdns resolve --provider doh=https://dns.example/dns-query --type BOTH --json a.example b.example
                """),
        ])

    /// `httpdns resolve`: every host is looked up concurrently; results print in argument order.
    static func resolve(_ arguments: [String]) async throws -> Int32 {
        let command = "httpdns resolve"
        guard let parsed = try parse(arguments, command: command, help: resolveHelp) else { return ExitStatus.success }
        let options = try SharedOptions(parsed, command: command)
        let hosts = parsed.positionals
        guard !hosts.isEmpty else { throw UsageError("missing <host>", command: command) }
        let engine = try options.makeEngine(transport: HTTPTransport(), trust: try options.makeTrust(command: command), command: command)

        let results = await withTaskGroup(of: (Int, Result<HTTPDNSAnswer, HTTPDNSError>).self) { group in
            for (index, host) in hosts.enumerated() {
                group.addTask {
                    // The library's policy: IP literal, static entry, protected → HTTPDNS with
                    // LocalDNS fallback, otherwise LocalDNS alone.
                    let name = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
                    do {
                        return (index, .success(try await engine.resolve(name, family: options.family)))
                    } catch let error as HTTPDNSError {
                        return (index, .failure(error))
                    } catch {
                        return (index, .failure(HTTPDNSError(.transport, String(describing: error), host: host)))
                    }
                }
            }
            var results = [Result<HTTPDNSAnswer, HTTPDNSError>?](repeating: nil, count: hosts.count)
            for await (index, result) in group { results[index] = result }
            return results
        }

        var failed = false
        for (host, result) in zip(hosts, results) {
            switch result {
            case .success(let answer):
                try Output.line(options.json ? jsonLine(answer) : humanLine(answer))
            case .failure(let error):
                failed = true
                Output.error("cannot resolve \(host): \(explain(error))")
            case nil:
                failed = true
                Output.error("cannot resolve \(host): lookup did not finish")
            }
        }
        return failed ? ExitStatus.failure : ExitStatus.success
    }

    static func humanLine(_ answer: HTTPDNSAnswer) -> String {
        let addresses = answer.addresses.map(\.description).joined(separator: ", ")
        var line = "\(answer.host)  \(addresses)  ttl=\(answer.ttl)"
        if answer.isStale { line += " (stale)" }
        return line + "  origin=\(answer.origin.rawValue)  source=\(answer.source)"
    }

    static func jsonLine(_ answer: HTTPDNSAnswer) -> String {
        var json = JSONLine()
        json.string("host", answer.host)
        json.strings("addresses", answer.addresses.map(\.description))
        json.number("ttl", answer.ttl)
        json.string("source", answer.source)
        json.string("origin", answer.origin.rawValue)
        json.bool("stale", answer.isStale)
        return json.text
    }
}
