import DNSStubCore
import DNSWire
import Foundation
import HTTPDNSCore
import HTTPDNSServer
import HTTPDNSStub

extension Command {
    /// `httpdns stub`'s options for the host's wiring and abuse limits.
    static let stubCheckSpecs: [OptionSpec] = [
        OptionSpec("check", help: """
            Do not serve: print where /etc/resolv.conf and systemd-resolved (resolved.conf and its drop-ins) \
            send names, whether a stub answers at --listen (one query, 1 s), and a verdict line: protected, \
            partly protected, NOT protected, or NOT answering (names go to the stub, and nothing answers \
            there). Exit status 0 only when protected, 1 not or partly protected, 2 not answering.
            """),
        OptionSpec("rate-limit", value: "n", help: """
            Queries per second per client (an IPv4 address, an IPv6 /64), every client, loopback included; \
            0 is no limit. Over it, UDP queries are dropped but every second one answered empty with TC=1 (a \
            real client retries over TCP), TCP ones get REFUSED. Default: 1000 for --allow-from clients, \
            none for loopback (the host's own programs).
            """),
    ]

    /// Where ``stubCheck(listen:)`` reads the host's files; a test points it at a directory tree of
    /// its own (internal, not in the help).
    static let stubCheckRootVariable = "HTTPDNS_STUB_CHECK_ROOT"

    /// `--rate-limit`, or the default configuration.
    static func stubRateLimit(_ parsed: ParsedArguments, bad: (String) -> UsageError) throws -> DNSStubRateLimiter.Configuration {
        var configuration = DNSStubRateLimiter.Configuration()
        guard let text = parsed.last("rate-limit") else { return configuration }
        guard let value = Int(text), value >= 0 else { throw bad("bad --rate-limit '\(text)': expected queries per second, 0 or more") }
        configuration.queriesPerSecond = value
        configuration.loopbackQueriesPerSecond = value
        return configuration
    }

    /// `httpdns stub --check`: reads the host's resolver configuration, probes `listen` and prints
    /// the lines of ``DNSStubHostCheck`` and its verdict.
    /// - Returns: 0 when protected, 1 otherwise.
    static func stubCheck(listen: DNSStubResolvedConf.Server) async throws -> Int32 {
        let root = ProcessInfo.processInfo.environment[stubCheckRootVariable] ?? ""
        func read(_ path: String) -> String? { try? String(contentsOfFile: root + path, encoding: .utf8) }
        var inputs = DNSStubHostCheck.Inputs(listen: listen)
        inputs.resolvConf = read("/etc/resolv.conf")
        inputs.resolvConfLink = try? FileManager.default.destinationOfSymbolicLink(atPath: root + "/etc/resolv.conf")
        let files = DNSStubResolvedConf.files(
            exists: { FileManager.default.fileExists(atPath: root + $0) },
            list: { (try? FileManager.default.contentsOfDirectory(atPath: root + $0)) ?? [] })
        inputs.resolvedUplinks = read("/run/systemd/resolve/resolv.conf")
        if !files.isEmpty || inputs.resolvedUplinks != nil {
            // Without any file resolved runs on its defaults: an empty configuration.
            inputs.resolvedConfs = [""] + files.compactMap(read)
        }
        (inputs.stubAnswers, inputs.stubRefused) = await stubAnswers(at: listen)
        let check = DNSStubHostCheck(inputs)
        for line in check.lines { try Output.line(line) }
        try Output.line(check.verdictLine)
        switch check.verdict {
        case .protected: return ExitStatus.success
        case .notAnswering: return stubNotAnswering
        case .partlyProtected, .notProtected: return ExitStatus.failure
        }
    }

    /// `--check`'s exit status when the host sends names to a stub that does not answer.
    static let stubNotAnswering: Int32 = 2

    /// Whether a DNS server answers `.` NS over UDP at `server` within 1 s (any RCODE counts), and
    /// when not, whether the port was closed (ICMP port unreachable: "connection refused").
    static func stubAnswers(at server: DNSStubResolvedConf.Server) async -> (answers: Bool, refused: Bool) {
        guard let upstream = try? DNSStubUpstreamSpec(parsing: "udp=\(server)").makeUpstream(transport: nil) else { return (false, false) }
        let query = DNSMessage.makeQuery(name: .root, type: .NS, id: UInt16.random(in: 0...UInt16.max), recursionDesired: true, edns: nil)
        do {
            _ = try await upstream.exchange(query, timeout: .seconds(1))
            return (true, false)
        } catch {
            return (false, "\(error)".contains("Connection refused"))
        }
    }
}
