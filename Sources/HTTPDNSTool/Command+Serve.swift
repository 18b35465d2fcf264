import Foundation
import HTTPDNS
import HTTPDNSCore
import HTTPDNSServer
import HTTPDNSTransport

extension Command {
    static let serveSpecs: [OptionSpec] = [
        OptionSpec("listen", value: "ip:port", help: "Address and port to listen on ([IPv6]:PORT for IPv6; port 0 picks one). Default 127.0.0.1:8053."),
        OptionSpec("zone", value: "file", help: """
            A JSON zone of names answered here: {"www.example.test": {"A": ["192.0.2.1"], "AAAA": [...], \
            "ttl": 60}, "*.example.test": {...}, "alias.example.test": {"CNAME": "www.example.test"}}.
            """),
        OptionSpec("upstream", value: "kind=url", help: """
            A resolver for names the zone lacks, tried in order (repeatable; the kinds of --provider). \
            Without one, such names get NXDOMAIN. The server never asks the machine's own resolver.
            """),
        OptionSpec("tls-cert", value: "file", help: "PEM certificate chain; with --tls-key the server speaks HTTPS only."),
        OptionSpec("tls-key", value: "file", help: "PEM private key for --tls-cert."),
        OptionSpec("dnspod-key", value: "id=key", help: """
            A DNSPod enterprise account (repeatable): requests with id=ID and alg=des|aes have dn decrypted \
            and the answer encrypted with KEY.
            """),
        OptionSpec("alibaba-secret", value: "account=secret", help: """
            An Alibaba account's signing secret (repeatable): /ACCOUNT/sign_d and sign_resolve then verify \
            the MD5 signature and expiry.
            """),
        OptionSpec("allow-private", help: "Pass on loopback and private addresses from upstreams (test beds)."),
        OptionSpec("cacert", value: "file", help: "PEM CA certificates trusted for TLS to upstreams, in addition to the system's."),
        OptionSpec("timeout", value: "seconds", help: "Time limit of each upstream attempt."),
        OptionSpec("config", value: "file", help: "A JSON config file; its \"serve\" object may hold listen, zone, upstreams, tlsCert, tlsKey."),
        HelpText.helpOption,
    ]

    static let serveHelp = HelpText(
        overview: """
            Run an HTTPDNS server: answers DNSPod (/d?dn=), Alibaba (/ACCOUNT/d?host=), IP-list (/ips?host=) \
            and DNS-over-HTTPS (/dns-query, wire and JSON) requests from a zone file and upstream resolvers. \
            Runs until SIGINT or SIGTERM, then stops cleanly.
            """,
        usage: "httpdns serve [<options>]",
        options: serveSpecs,
        sections: [
            ("OUTPUT", "One line when ready: listening on http(s)://IP:PORT"),
            ("EXIT STATUS", "0 after a clean stop, 1 when it cannot listen or load the zone, 64 bad usage."),
            ("EXAMPLES", """
                httpdns serve --zone zone.json --upstream doh=https://dns.example/dns-query
                httpdns serve --listen 0.0.0.0:443 --tls-cert cert.pem --tls-key key.pem --zone zone.json
                """),
        ])

    /// `httpdns serve`.
    static func serve(_ arguments: [String]) async throws -> Int32 {
        let command = "httpdns serve"
        guard let parsed = try parse(arguments, command: command, help: serveHelp) else { return ExitStatus.success }
        func bad(_ message: String) -> UsageError { UsageError(message, command: command) }
        guard parsed.positionals.isEmpty else { throw bad("unexpected argument '\(parsed.positionals[0])'") }
        var config = ConfigFile()
        if let path = parsed.last("config") { config = try ConfigFile.load(path: path, command: command) }
        let section = config.serve

        var configuration = HTTPDNSService.Configuration()
        let listen = parsed.last("listen") ?? section?.listen ?? "127.0.0.1:8053"
        guard let (address, port) = parseListen(listen) else {
            throw bad("bad --listen '\(listen)': expected IP:PORT ([IPv6]:PORT for IPv6)")
        }
        configuration.address = address
        configuration.port = port

        var givenTimeout = config.timeout
        if let text = parsed.last("timeout") {
            guard let seconds = Double(text), seconds > 0, seconds <= 3_600 else { throw bad("bad --timeout '\(text)'") }
            givenTimeout = seconds
        }
        let trust = try SharedOptions.makeTrust(cacert: parsed.last("cacert") ?? config.cacert, command: command)
        let transport = HTTPTransport()
        let timeout = givenTimeout ?? 5
        let upstreams = parsed.has("upstream") ? parsed.all("upstream") : (section?.upstreams ?? [])
        for text in upstreams {
            do {
                let spec = try HTTPDNSProviderSpec(parsing: text)
                configuration.upstream.resolvers.append(
                    try spec.makeResolver(transport: transport, trust: trust, timeout: .milliseconds(Int64(timeout * 1000))))
            } catch {
                throw bad("bad --upstream '\(text)': \(SharedOptions.detail(error))")
            }
        }
        if givenTimeout != nil {
            configuration.upstream.timeouts.perAttempt = .seconds(timeout)
            configuration.upstream.timeouts.httpdnsBudget = .seconds(timeout * Double(max(1, upstreams.count)))
        }
        for text in parsed.all("dnspod-key") {
            guard let (id, key) = splitPair(text), !key.isEmpty else { throw bad("bad --dnspod-key '\(text)': expected ID=KEY") }
            configuration.dnspod.accountKeys[id] = key
        }
        for text in parsed.all("alibaba-secret") {
            guard let (account, secret) = splitPair(text), !secret.isEmpty else {
                throw bad("bad --alibaba-secret '\(text)': expected ACCOUNT=SECRET")
            }
            configuration.alibaba.secrets[account] = secret
        }
        let allowPrivate = parsed.flag("allow-private") || (config.allowPrivate ?? false)
        configuration.upstream.hygiene = HTTPDNSAnswerHygiene(allowPrivate: allowPrivate)

        let certificate = parsed.last("tls-cert") ?? section?.tlsCert
        let key = parsed.last("tls-key") ?? section?.tlsKey
        guard (certificate == nil) == (key == nil) else { throw bad("--tls-cert and --tls-key go together") }
        if let certificate, let key {
            guard let pem = try? String(contentsOfFile: certificate, encoding: .utf8) else { throw bad("cannot read --tls-cert \(certificate)") }
            guard let keyPEM = try? String(contentsOfFile: key, encoding: .utf8) else { throw bad("cannot read --tls-key \(key)") }
            configuration.tlsCertificatePEM = pem
            configuration.tlsKeyPEM = keyPEM
        }
        if let zone = parsed.last("zone") ?? section?.zone {
            do {
                configuration.zone = try HTTPDNSZone(contentsOfFile: zone)
            } catch {
                throw ToolFailure("cannot load zone \(zone): \(error.detail)")
            }
        } else if upstreams.isEmpty {
            Output.diagnostic("httpdns: warning: no --zone and no --upstream: every name gets NXDOMAIN")
        }

        let service = HTTPDNSService(configuration: configuration)
        do {
            try service.start()
        } catch {
            throw ToolFailure("cannot listen on \(listen): \(error.detail)")
        }
        let scheme = configuration.tlsCertificatePEM == nil ? "http" : "https"
        try Output.line("listening on \(scheme)://\(address.uriText):\(service.port ?? port)")
        await waitForTermination()
        service.stop()
        return ExitStatus.success
    }

    /// `NAME=VALUE` with a non-empty name.
    static func splitPair(_ text: String) -> (String, String)? {
        guard let equals = text.firstIndex(of: "="), equals != text.startIndex else { return nil }
        return (String(text[..<equals]), String(text[text.index(after: equals)...]))
    }

    /// `IP:PORT` or `[IPv6]:PORT`, port 0-65535 (0 picks a free one).
    static func parseListen(_ text: String) -> (HTTPDNSIPAddress, Int)? {
        guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]),
              (0...65_535).contains(port)
        else { return nil }
        var host = String(text[..<colon])
        let bracketed = host.hasPrefix("[") && host.hasSuffix("]")
        if bracketed { host = String(host.dropFirst().dropLast()) }
        guard let address = HTTPDNSIPAddress(host), bracketed == (address.family == .v6) else { return nil }
        return (address, port)
    }

    /// Suspends until SIGINT or SIGTERM.
    static func waitForTermination() async {
        let resumed = HTTPDNSLock(false)
        var watcher: SignalWatcher?
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            watcher = SignalWatcher { _ in
                let first = resumed.withLock { done -> Bool in
                    defer { done = true }
                    return !done
                }
                if first { continuation.resume() }
            }
        }
        watcher?.stop()
    }
}
