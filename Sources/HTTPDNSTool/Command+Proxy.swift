import Foundation
import HTTPDNS
import HTTPDNSCore
import HTTPDNSTransport
import HTTPDNSNetworking

extension Command {
    static let proxySpecs: [OptionSpec] = [
        OptionSpec("listen", value: "ip:port", help: """
            Address and port to listen on ([IPv6]:PORT for IPv6; port 0 picks one; repeatable, every address \
            gets the first one's port). Default 127.0.0.1:8118.
            """),
        OptionSpec("proxy-auth", value: "user:pass", help: "The credential clients must send. Default: user httpdns and a random token."),
        OptionSpec("no-proxy-auth", help: """
            Require no credential (for clients that cannot send one, such as Chromium's --proxy-server). \
            Any local user can then use the proxy.
            """),
        OptionSpec("connect-timeout", value: "seconds", help: "Time limit to connect to one address. Default 5, or --timeout."),
        OptionSpec("max-connections", value: "n", help: "Most client connections at once; more are refused with 503. Default 256."),
        OptionSpec("drain-timeout", value: "seconds", help: """
            On SIGTERM/SIGINT: how long tunnels and forwarded requests in flight may finish (new connects are \
            refused and idle connections closed at once). Default 5.
            """),
        OptionSpec("fallback-ips", value: "url", help: """
            An IP-list endpoint asked for a redirect address when a host cannot be found or connected \
            (the domain-block redirect).
            """),
        OptionSpec("verbose", short: "v", help: "Print one line per tunnel and refusal on stderr."),
    ]

    static let proxyHelp = HelpText(
        overview: """
            Run a local HTTP proxy that resolves through HTTPDNS, for programs that know nothing of it: curl, \
            Python, git, browsers, URLSession on Linux. They send CONNECT host:443 without resolving the name; \
            the proxy resolves it (protected hosts over HTTPDNS, others through LocalDNS), connects with \
            failover and moves bytes. TLS stays end to end. Plain http:// URLs are forwarded. Loopback and \
            private targets are refused unless --allow-private is given. Runs until SIGINT or SIGTERM, then \
            drains: new connects are refused, idle connections close, forwarded requests get their whole \
            response and tunnels finish (each closes once quiet for a second) within --drain-timeout; then it \
            exits 0.
            """,
        usage: "httpdns proxy [<options>]",
        options: proxySpecs + ReportOptions.specs + SharedOptions.specs.filter { $0.key != "json" } + [HelpText.helpOption],
        sections: [
            ("OUTPUT", "First line on stdout: the proxy URL to use, credential included (http://USER:TOKEN@127.0.0.1:8118)."),
            ("EXIT STATUS", """
                0 after a clean stop (also when the drain cut connections at --drain-timeout; stderr says how \
                many), 1 when it cannot listen, 64 bad usage.
                """),
            ("EXAMPLES", """
                httpdns proxy --listen 127.0.0.1:8118 --provider doh=https://dns.example/dns-query
                https_proxy=$(head -1 proxy.out) curl https://www.example.com/
                httpdns proxy --no-proxy-auth --listen [::1]:8118
                httpdns proxy --report https://httpdns.example/report --report-account 1234 --report-secret S
                """),
        ])

    /// `httpdns proxy`.
    static func proxy(_ arguments: [String]) async throws -> Int32 {
        let command = "httpdns proxy"
        guard let parsed = try parse(arguments, command: command, help: proxyHelp) else { return ExitStatus.success }
        func bad(_ message: String) -> UsageError { UsageError(message, command: command) }
        guard parsed.positionals.isEmpty else { throw bad("unexpected argument '\(parsed.positionals[0])'") }
        let shared = try SharedOptions(parsed, command: command)
        var configuration = HTTPDNSProxy.Configuration()
        let listens = parsed.has("listen") ? parsed.all("listen") : ["127.0.0.1:8118"]
        configuration.listenAddresses = []
        for (index, text) in listens.enumerated() {
            guard let (address, port, scheme) = parseListen(text), scheme == nil || scheme == "http" else {
                throw bad("bad --listen '\(text)': expected IP:PORT ([IPv6]:PORT for IPv6)")
            }
            configuration.listenAddresses.append(address)
            if index == 0 { configuration.port = UInt16(port) }
        }
        if parsed.flag("no-proxy-auth") {
            guard !parsed.has("proxy-auth") else { throw bad("--proxy-auth and --no-proxy-auth exclude each other") }
            configuration.credential = nil
        } else if let text = parsed.last("proxy-auth") {
            guard let colon = text.firstIndex(of: ":"), colon != text.startIndex, text.index(after: colon) != text.endIndex else {
                throw bad("bad --proxy-auth: expected USER:PASS")
            }
            configuration.credential = .init(user: String(text[..<colon]), password: String(text[text.index(after: colon)...]))
        }
        configuration.allowPrivateTargets = shared.allowPrivate
        configuration.failureReports = try ReportOptions.parse(parsed, command: command)
        if let seconds = try FetchOptions.seconds(parsed.last("connect-timeout"), "--connect-timeout", bad) ?? shared.timeout {
            configuration.connectTimeout = .milliseconds(Int64(seconds * 1000))
        }
        if let text = parsed.last("max-connections") {
            guard let count = Int(text), (1...100_000).contains(count) else { throw bad("bad --max-connections '\(text)'") }
            configuration.maxConnections = count
        }
        let drainTimeout = try FetchOptions.seconds(parsed.last("drain-timeout"), "--drain-timeout", bad) ?? 5
        // Provider requests go through this transport, which never honours http(s)_proxy: the proxy
        // cannot loop through itself even when its own environment points at it.
        let transport = HTTPTransport()
        let trust = try shared.makeTrust(command: command)
        let monitor = ProxyMonitor(verbose: parsed.flag("verbose"))
        var engineConfiguration = try shared.makeEngine(transport: transport, trust: trust, command: command).configuration
        engineConfiguration.monitor = monitor
        configuration.monitor = monitor
        if let url = parsed.last("fallback-ips") ?? shared.config.fallbackIPs {
            do {
                configuration.blockRedirect = try HTTPDNSProviderSpec(kind: .ips, location: url)
                    .makeResolver(transport: transport, trust: trust, timeout: .milliseconds(Int64((shared.timeout ?? 5) * 1000)))
            } catch {
                throw bad("bad --fallback-ips '\(url)': \(SharedOptions.detail(error))")
            }
        }
        raiseDescriptorLimit()
        let proxy = HTTPDNSProxy(engine: HTTPDNSEngine(configuration: engineConfiguration), configuration: configuration)
        do {
            try proxy.start()
        } catch {
            throw ToolFailure("cannot listen on \(listens.joined(separator: ", ")): \(error.detail)")
        }
        try await waitForStopSignal(announce: { try Output.line(proxy.url?.absoluteString ?? "") }) {
            let cut = await proxy.stop(drain: .milliseconds(Int64(drainTimeout * 1000)))
            if cut > 0 { Output.diagnostic("httpdns: the drain cut \(cut) connection\(cut == 1 ? "" : "s") still busy at --drain-timeout") }
        }
        await proxy.failureReporter?.flush(within: .seconds(2))
        return ExitStatus.success
    }

    /// Says it is ready with `announce` (the signals are already watched then: a supervisor may
    /// signal as soon as it reads that line), suspends until SIGINT or SIGTERM, then runs `stop`;
    /// signals that come meanwhile are ignored, as during `serve`'s drain.
    static func waitForStopSignal(
        announce: () throws -> Void, reload: (@Sendable () -> Void)? = nil, then stop: () async -> Void
    ) async throws {
        let (stops, stopped) = AsyncStream.makeStream(of: Void.self)
        let watcher = try SignalWatcher(reload == nil ? [SIGINT, SIGTERM] : [SIGINT, SIGTERM, SIGHUP]) { signal in
            if signal == SIGHUP { reload?() } else { stopped.yield() }
        }
        defer { watcher.stop() }
        try announce()
        for await _ in stops { break }
        await stop()
    }

    /// A tunnel needs six descriptors (two sockets, two pipes): lift the soft limit to the hard one.
    static func raiseDescriptorLimit() {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0, limit.rlim_cur < limit.rlim_max else { return }
        limit.rlim_cur = limit.rlim_max
        _ = setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
    }
}

/// `httpdns proxy -v`: one stderr line per tunnel, failure and refusal.
final class ProxyMonitor: HTTPDNSEventMonitor, HTTPDNSProxyMonitor {
    let verbose: Bool

    init(verbose: Bool) {
        self.verbose = verbose
    }

    func proxyTunnelOpened(host: String, port: UInt16, address: HTTPDNSIPAddress, attempts: Int) {
        if verbose { Output.diagnostic("* \(host):\(port) → \(address.uriText)" + (attempts > 1 ? " (attempt \(attempts))" : "")) }
    }

    func proxyTunnelFailed(host: String, port: UInt16, status: Int, reason: String) {
        if verbose { Output.diagnostic("* \(host):\(port) failed (\(status)): \(reason)") }
    }

    func proxyRefused(status: Int, reason: String) {
        if verbose { Output.diagnostic("* refused (\(status)): \(reason)") }
    }

    func fellBackToLocalDNS(host: String) {
        if verbose { Output.diagnostic("* asking LocalDNS for \(host)") }
    }
}
