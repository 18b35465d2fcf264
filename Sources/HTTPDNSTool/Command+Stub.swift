import DNSStubCore
import DNSWire
import HTTPDNS
import HTTPDNSCore
import HTTPDNSOperations
import HTTPDNSServer
import HTTPDNSStub
import HTTPDNSTransport
import HTTPServing

extension Command {
    /// Where the stub listens by default: a loopback address of its own, clear of systemd-resolved's
    /// 127.0.0.53 (its stub) and 127.0.0.54 (its proxy-only stub).
    static let stubDefaultListen = "127.0.0.153:53"

    static let stubSpecs: [OptionSpec] = [
        OptionSpec("listen", value: "ip:port", help: """
            Address and port for both UDP and TCP ([IPv6]:PORT for IPv6; port 0 picks one). Default \
            \(stubDefaultListen): not systemd-resolved's 127.0.0.53 or 127.0.0.54, so both can run.
            """),
        OptionSpec("allow-from", value: "cidr", help: """
            Clients answered (repeatable); others get REFUSED. Default: loopback only (127.0.0.0/8, ::1).
            """),
        OptionSpec("upstream", value: "kind=url", help: """
            A DNS server for every query type the providers do not answer (repeatable): \
            udp=IP:PORT (plain DNS, TCP when truncated), doh=https://… (RFC 8484; ?bootstrap=IP gives its \
            address), dot=IP[:PORT]#NAME (DNS over TLS, RFC 7858; port 853 by default; the certificate \
            verified for NAME against the system's CAs and --cacert; one connection kept, queries pipelined \
            on it) or doq=IP[:PORT]#NAME (DNS over QUIC, RFC 9250; UDP port 853 by default; verified the \
            same way; one connection kept, a stream per query). Default: the DoH services of the default providers. Ranked by smoothed RTT and failures; \
            one slower than its usual time is hedged (the next is asked too, the first answer wins).
            """),
        OptionSpec("timeout", value: "seconds", help: """
            Time limit of one upstream exchange (TCP retry included) and of each provider attempt. Whatever \
            the upstreams do, every query is answered within \(helpSeconds(DNSStubResolver.Configuration().answerDeadline)) s: \
            SERVFAIL (EDE 22) when nothing came by then, while they are still asked, so that the client's \
            retry finds the answer cached (glibc waits 5 s per try). Default \(helpSeconds(DNSStubResolver.Configuration().upstreamTimeout)).
            """),
    ]

    /// The config file's "stub" object, read against the stub's own option rows (the shared ones
    /// are the file's top-level keys).
    static let stubConfig = ConfigSection(
        name: "stub", options: (stubSpecs + stubRouteSpecs + stubBootSpecs + stubCheckSpecs).filter { $0.long != "check" },
        listKeys: ["allow-from": "allowFrom", "upstream": "upstreams", "hosts": "hosts", "route": "routes"],
        pathOptions: ["cache-dir", "cache-key-file", "hosts", "query-log"])

    /// `1.8`, `5`: a duration as --help shows it, from the library's own default.
    static func helpSeconds(_ duration: Duration) -> String {
        let milliseconds = Int(duration.inSeconds * 1000)
        return milliseconds % 1000 == 0 ? "\(milliseconds / 1000)" : "\(Double(milliseconds) / 1000)"
    }

    static let stubHelp = HelpText(
        overview: """
            Run a local DNS server (UDP and TCP, RFC 1035 and 7766) for every program on the host. A and AAAA \
            queries of protected names are answered through HTTPDNS (the providers in order, the engine's \
            cache and serve-stale); every other type, and those names when HTTPDNS fails (unless \
            --httpdns-only), through the upstreams, with a wire cache that serves stale answers when the \
            upstreams fail (RFC 8767). A query nobody answers gets SERVFAIL with an Extended DNS Error \
            (RFC 8914). The engine never falls back to the system resolver here: the stub may be it. Runs \
            until SIGINT or SIGTERM, then drains (new TCP connections refused, every query already received answered) and exits 0.
            """,
        usage: "httpdns stub [<options>]",
        options: stubSpecs + stubRouteSpecs + stubBootSpecs + stubCheckSpecs + SharedOptions.specs.filter { !["json", "local-dns", "type", "timeout"].contains($0.key) } + [HelpText.helpOption],
        sections: [
            ("OUTPUT", "First line on stdout once both sockets are bound: listening on udp://IP:PORT tcp://IP:PORT; with --metrics, then: metrics on http://IP:PORT/metrics"),
            ("SYSTEMD", """
                With LISTEN_FDS (socket activation) the passed UDP and TCP sockets are served and --listen is \
                ignored; READY=1 goes to NOTIFY_SOCKET once the caches are loaded and the sockets answer, \
                STOPPING=1 at stop. Units: contrib/systemd/httpdns-stub.socket and .service.
                """),
            ("CONFIG KEYS", """
                The "stub" object of --config FILE takes: \(stubConfig.reference); the file's top-level keys \
                (providers, protect, resolve, …) the shared options.
                """),
            ("EXIT STATUS", """
                0 after SIGINT or SIGTERM once every query received is answered, 1 when it cannot listen or \
                the drain ended with queries unanswered, 64 bad usage. With --check: 0 protected, 1 not or \
                partly protected, 2 names go to the stub and nothing answers there.
                """),
            ("EXAMPLES", """
                httpdns stub
                dig @127.0.0.153 www.example.com
                httpdns stub --check
                httpdns stub --listen 127.0.0.1:5353 --upstream udp=10.0.0.1:53 --protect '*.example.com'
                httpdns stub --route '*.corp.example,!www.corp.example=udp=10.0.0.1:53' --metrics 127.0.0.1:9153
                """),
        ])

    /// `httpdns stub`.
    static func stub(_ arguments: [String]) async throws -> Int32 {
        let command = "httpdns stub"
        guard var parsed = try parse(arguments, command: command, help: stubHelp) else { return ExitStatus.success }
        func bad(_ message: String) -> UsageError { UsageError(message, command: command) }
        guard parsed.positionals.isEmpty else { throw bad("unexpected argument '\(parsed.positionals[0])'") }
        // The "stub" object: every stub option by its key, under the flags given here.
        if let path = parsed.last("config") {
            try stubConfig.merge(try ConfigFile.load(path: path, command: command), into: &parsed, command: command)
        }
        let shared = try SharedOptions(parsed, command: command)
        var configuration = DNSStubServer.Configuration()
        // Taken first, before any thread of ours runs: it edits the environment (LISTEN_*).
        let activated: (udp: Int32, tcp: Int32)?
        do {
            activated = try DNSStubSystemd.activatedSockets()
        } catch {
            throw ToolFailure("socket activation: \(error.detail)")
        }
        let cacheDirectory = parsed.last("cache-dir")
        let hosts = try stubHosts(parsed.all("hosts"), command: command)
        let listen = parsed.last("listen") ?? stubDefaultListen
        guard let (address, port, scheme) = parseListen(listen), scheme == nil else {
            throw bad("bad --listen '\(listen)': expected IP:PORT ([IPv6]:PORT for IPv6)")
        }
        configuration.address = address
        configuration.port = UInt16(port)
        if parsed.has("check") { return try await stubCheck(listen: DNSStubResolvedConf.Server(address: address, port: UInt16(port))) }
        configuration.rateLimit = try stubRateLimit(parsed, bad: bad)
        if parsed.has("allow-from") {
            configuration.allowFrom = []
            for text in parsed.all("allow-from") {
                do {
                    configuration.allowFrom.append(try HTTPDNSNetwork(text))
                } catch {
                    throw bad("bad --allow-from '\(text)': expected a CIDR such as 10.0.0.0/8")
                }
            }
        }
        let transport = HTTPTransport()
        let trust = try shared.makeTrust(command: command)
        let upstreamTexts = parsed.has("upstream")
            ? parsed.all("upstream")
            : SharedOptions.defaultProviders.filter { $0.hasPrefix("doh=") }
        var upstreams: [any DNSStubUpstream] = []
        for text in upstreamTexts {
            do {
                upstreams.append(try DNSStubUpstreamSpec(parsing: text).makeUpstream(transport: transport, trust: trust))
            } catch {
                throw bad("bad --upstream '\(text)': \(error.detail)")
            }
        }
        let (routes, routeUpstreams, metricsListen, queryLog) = try stubRouting(parsed, transport: transport, trust: trust, bad: bad)
        let metrics = metricsListen == nil ? nil : DNSStubMetrics()
        var engineConfiguration = try shared.makeEngine(transport: transport, trust: trust, command: command).configuration
        // The stub may be the system resolver: the engine's LocalDNS would ask the stub itself.
        // The upstreams are the fallback instead (DNSStubResolver.Configuration.engineFallback).
        engineConfiguration.failover.httpdnsOnly = true
        let monitor = StubMonitor()
        engineConfiguration.monitor = monitor
        if let cacheDirectory { engineConfiguration.cache.persistencePath = cacheDirectory + "/engine.cache" }
        engineConfiguration.cache.persistenceKey = try stubCacheKey(parsed.last("cache-key-file"), command: command)
        var resolverConfiguration = DNSStubResolver.Configuration()
        resolverConfiguration.engineFallback = !shared.httpdnsOnly
        resolverConfiguration.hosts = hosts
        if let timeout = shared.timeout { resolverConfiguration.upstreamTimeout = .milliseconds(Int64(timeout * 1000)) }
        let engine = HTTPDNSEngine(configuration: engineConfiguration)
        let resolver = DNSStubResolver(
            engine: engine, upstreams: upstreams, routes: routes, routeUpstreams: routeUpstreams,
            configuration: resolverConfiguration, metrics: metrics, queryLog: queryLog, warning: { monitor.warning($0) })
        // Both caches are loaded before a socket answers: a restart with the upstreams unreachable
        // answers what it knew at once.
        let persistence = cacheDirectory.map {
            DNSStubCachePersistence(
                path: $0 + "/stub.cache", resolver: resolver, key: engineConfiguration.cache.persistenceKey, monitor: monitor)
        }
        await onOwnThread("httpdns stub cache load") {
            engine.waitForCacheFile()
            persistence?.load()
        }
        let server: DNSStubServer
        do {
            server = try DNSStubServer(resolver: resolver, configuration: configuration, activated: activated)
        } catch {
            throw ToolFailure("cannot listen on \(listen): \(error.detail)")
        }
        var metricsServer: HTTPServer?
        if let metrics, let (metricsAddress, metricsPort) = metricsListen {
            do {
                metricsServer = try metrics.serve(address: metricsAddress, port: metricsPort) { resolver.statusDocument() }
            } catch {
                server.stop()
                throw ToolFailure("cannot listen on --metrics \(metricsAddress.uriText):\(metricsPort): \(error)")
            }
        }
        persistence?.start()
        let watcher = stubWatchNetwork(resolver, renewing: transport)
        var drained = true
        let hostPaths = parsed.all("hosts")
        try await waitForStopSignal(announce: {
            let endpoint = "\(server.localAddress.uriText):\(server.port)"
            try Output.line("listening on udp://\(endpoint) tcp://\(endpoint)")
            if let metricsServer, let (metricsAddress, _) = metricsListen {
                try Output.line("metrics on http://\(metricsAddress.uriText):\(metricsServer.port)/metrics")
            }
            DNSStubSystemd.notify("READY=1")
        }, reload: {
            // SIGHUP: --hosts read again; a file that cannot be read or parsed keeps the entries in use.
            do {
                let fresh = try stubHosts(hostPaths, command: command)
                resolver.replaceHosts(fresh)
                if !hostPaths.isEmpty { Output.diagnostic("httpdns stub: --hosts read again (\(hostPaths.joined(separator: ", ")))") }
            } catch {
                monitor.warning("\(error); the --hosts entries in use are kept")
            }
        }) {
            DNSStubSystemd.notify("STOPPING=1")
            watcher?.stop()
            // The drain: every query read is answered (issue 25). A query may try the engine and
            // each upstream in turn, each within the timeout.
            let longest = resolverConfiguration.upstreamTimeout * (upstreams.count + 1) + .seconds(1)
            server.stop()
            Output.diagnostic("httpdns stub: draining: new connections refused, the queries received are being answered")
            if await !server.drain(within: longest) {
                Output.diagnostic("httpdns stub: queries still unanswered after \(longest); exiting with status 1")
                drained = false
            }
            // No answer deadline may run while the process exits.
            _ = await resolver.waitForDeadlines(within: resolverConfiguration.answerDeadline + .seconds(1))
            metricsServer?.stop(drain: .milliseconds(200))
            queryLog?.close(timeout: .seconds(2))
            await onOwnThread("httpdns stub cache save") {
                persistence?.stop()
                do {
                    try engine.saveCache()
                } catch {
                    monitor.warning("cache file \(cacheDirectory ?? "")/engine.cache could not be written: \(error)")
                }
            }
        }
        return drained ? ExitStatus.success : ExitStatus.failure
    }
}
