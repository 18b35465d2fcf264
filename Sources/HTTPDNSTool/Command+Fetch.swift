import HTTPDNS
import HTTPDNSCore
import HTTPDNSTransport
import HTTPDNSNetworking

extension Command {
    static let fetchHelp = HelpText(
        overview: """
            Fetch a URL like curl, protected by HTTPDNS: the host is resolved over HTTPDNS and the connection \
            goes to that address, while the Host header, TLS SNI and certificate verification stay on the \
            real name. The body goes to stdout.
            """,
        usage: "httpdns fetch [<options>] <url>",
        arguments: [("<url>", "An http:// or https:// URL (http:// is assumed when no scheme is given).")],
        options: FetchOptions.specs + ReportOptions.specs + SharedOptions.specs.filter { $0.key != "json" } + [HelpText.helpOption],
        sections: [
            ("EXIT STATUS", ToolHelp.exitStatus + " With --fail, an HTTP status of 400 or above is a failure."),
            ("EXAMPLES", """
                httpdns fetch https://www.example.com/
                httpdns fetch -L -o page.html https://example.com/
                httpdns fetch -X POST -H 'Content-Type: application/json' -d '{"a":1}' https://api.example.com/v1
                httpdns fetch --data-binary @big.bin https://upload.example.com/
                httpdns fetch -v --resolve example.com:443:203.0.113.7 https://example.com/
                httpdns fetch --report https://httpdns.example/report --report-token T https://www.example.com/
                """),
        ])

    /// `httpdns fetch`; SIGINT/SIGTERM cancel the transfer (the `-o` file is then left untouched).
    static func fetch(_ arguments: [String]) async throws -> Int32 {
        let command = "httpdns fetch"
        guard let parsed = try parse(arguments, command: command, help: fetchHelp) else { return ExitStatus.success }
        let shared = try SharedOptions(parsed, command: command)
        let options = try FetchOptions(parsed, shared: shared, command: command)
        let reports = try ReportOptions.parse(parsed, command: command)
        let transport = HTTPTransport()
        let trust = try shared.makeTrust(command: command)
        let monitor = FetcherMonitor(verbose: options.verbose)
        let engine = try makeFetchEngine(shared, transport: transport, trust: trust, monitor: monitor, command: command)

        var configuration = HTTPDNSClient.Configuration()
        configuration.connectTimeout = .milliseconds(Int64((options.connectTimeout ?? 10) * 1000))
        configuration.requestTimeout = options.maxTime.map { .milliseconds(Int64($0 * 1000)) }
        configuration.maximumRedirects = options.maxRedirects
        configuration.cookieStorage = nil
        if let url = options.fallbackIPs {
            do {
                let endpoint = try HTTPDNSProviderSpec(kind: .ips, location: url)
                    .makeResolver(transport: transport, trust: trust, timeout: .milliseconds(Int64((shared.timeout ?? 5) * 1000)))
                configuration.blockRedirect = FetcherBlockRedirect(endpoint: endpoint, monitor: monitor)
            } catch {
                throw UsageError("bad --fallback-ips '\(url)': \(SharedOptions.detail(error))", command: command)
            }
        }
        configuration.failureReports = reports
        let client = HTTPDNSClient(engine: engine, transport: transport, configuration: configuration)
        let fetcher = Fetcher(options: options, client: client, monitor: monitor, trustText: trustText(trust))
        let task = Task { try await fetcher.run() }
        let signals = try SignalWatcher { _ in task.cancel() }
        defer { signals.stop() }
        let result = await task.result
        // The process ends here: the reports of this fetch go now rather than after the usual wait.
        // An address raced past may still be connecting; its failure (a blackholed origin times out
        // within the connect timeout) is one of them.
        // The wait ends as soon as they are sent; its limit only matters with a slow endpoint.
        if let reporter = client.failureReporter {
            await client.racedPast.settle(within: configuration.connectTimeout)
            await reporter.flush(within: .seconds(10))
            if options.verbose, reporter.requestCount > 0 || reporter.queuedCount > 0 || reporter.droppedCount > 0 {
                Output.diagnostic(
                    "* failure reports: \(reporter.acceptedCount) accepted, \(reporter.queuedCount) not sent, \(reporter.droppedCount) dropped")
            }
        }
        return try result.get()
    }

    /// The shared options' engine (its static entries are the `--resolve` ones, always pinned); the
    /// monitor learns what the engine does.
    static func makeFetchEngine(
        _ shared: SharedOptions, transport: HTTPTransport, trust: HTTPDNSTrust, monitor: FetcherMonitor, command: String
    ) throws(UsageError) -> HTTPDNSEngine {
        var configuration = try shared.makeEngine(transport: transport, trust: trust, command: command).configuration
        configuration.monitor = monitor
        return HTTPDNSEngine(configuration: configuration)
    }

    /// How `-v` names the CAs certificates are verified with.
    static func trustText(_ trust: HTTPDNSTrust) -> String {
        switch trust {
        case .system: "system CAs"
        case .caFile(let path): "CAs in \(path)"
        case .caPEM: "system CAs + --cacert"
        }
    }
}
