import DNSStubCore
import HTTPDNSCore
import HTTPDNSOperations
import HTTPDNSServer
import HTTPDNSStub
import HTTPDNSTransport

extension Command {
    /// `httpdns stub`'s options for routes and observation, parsed by ``stubRouting(_:transport:trust:bad:)``.
    static let stubRouteSpecs: [OptionSpec] = [
        OptionSpec("route", value: "pattern=upstream", help: """
            Names matching PATTERN (as --protect: name, *.suffix, comma-separated, !pattern excludes) go to \
            UPSTREAM only (as --upstream), every type, never to HTTPDNS (repeatable; the same PATTERN again \
            adds an upstream to it). The longest matching suffix wins.
            """),
        OptionSpec("metrics", value: "ip:port", help: """
            Serve GET /metrics (Prometheus text) there: queries by transport and source, per upstream \
            results, smoothed RTT and hedges, cache entries; and GET /status, the console of upstreams and \
            caches (JSON, or an HTML page for a browser), without a token: keep it on loopback. Default off.
            """),
        OptionSpec("query-log", value: "file|-", help: """
            Append one JSON line per query (time, client, transport, name, type, rcode, source, upstream, ms) \
            to FILE, or stdout for -; written off the serving threads, lines dropped (and counted) when it lags.
            """),
    ]

    /// `--route`, `--metrics` and `--query-log`: the routes with their upstreams, where to serve
    /// the metrics, and the open query log.
    /// - Throws: a usage error naming the bad option, ``ToolFailure`` when the log cannot be opened.
    static func stubRouting(
        _ parsed: ParsedArguments, transport: HTTPTransport, trust: HTTPDNSTrust, bad: (String) -> UsageError
    ) throws -> (DNSStubRoutes, [[any DNSStubUpstream]], (HTTPDNSIPAddress, Int)?, HTTPDNSLineLog?) {
        let routes: DNSStubRoutes
        do {
            routes = try DNSStubRoutes(parsing: parsed.all("route"))
        } catch {
            throw bad("bad --route: \(error.detail)")
        }
        var routeUpstreams: [[any DNSStubUpstream]] = []
        for route in routes.routes {
            var list: [any DNSStubUpstream] = []
            for text in route.upstreams {
                do {
                    list.append(try DNSStubUpstreamSpec(parsing: text).makeUpstream(transport: transport, trust: trust))
                } catch {
                    throw bad("bad --route '\(route.patterns)=\(text)': \(error.detail)")
                }
            }
            routeUpstreams.append(list)
        }
        var metricsListen: (HTTPDNSIPAddress, Int)?
        if let text = parsed.last("metrics") {
            guard let (address, port, scheme) = parseListen(text), scheme == nil else {
                throw bad("bad --metrics '\(text)': expected IP:PORT ([IPv6]:PORT for IPv6)")
            }
            metricsListen = (address, port)
        }
        var queryLog: HTTPDNSLineLog?
        if let path = parsed.last("query-log") {
            do {
                queryLog = try HTTPDNSLineLog(path: path)
            } catch {
                throw ToolFailure("cannot open --query-log \(path): \(error)")
            }
        }
        return (routes, routeUpstreams, metricsListen, queryLog)
    }
}
