import DNSWire
import HTTPDNSCore
import HTTPDNSOperations
import HTTPServing

extension HTTPDNSService {
    /// The counters behind `/metrics`.
    package var metrics: HTTPDNSServerMetrics { configuration.metrics }

    /// Records one answered request in the metrics and, when configured, the access log.
    func observe(_ request: HTTPServer.Request, _ response: HTTPServer.Response, _ lookups: HTTPDNSServiceLookups, since started: ContinuousClock.Instant) {
        let latency = ContinuousClock.now - started
        let endpoint = request.isQUIC
            ? HTTPDNSServerMetrics.Endpoint.doq
            : request.isMessage
            ? HTTPDNSServerMetrics.Endpoint.dot
            : HTTPDNSServerMetrics.Endpoint(method: request.method, path: request.path, hasDNSParameter: request.query.count("dns") > 0)
        // Probes and the operator's reads (a console refreshing every 5 s, a scraper) are no DNS
        // queries: counted, they would swell the query rates the dashboard shows.
        guard endpoint != .health, request.path != "/metrics", request.path != "/status" else { return }
        let format: HTTPDNSServerMetrics.Format
        switch endpoint {
        case .dnspod: format = lookups.encrypted ? .encrypted : .text
        case .dohGet, .dohPost, .dot, .doq: format = .wire
        case .alibaba, .ips, .dohJSON, .report: format = .json
        case .health, .other: format = .text
        }
        configuration.metrics.record(HTTPDNSServerMetrics.Query(
            endpoint: endpoint, format: format, status: response.status, rcode: lookups.rcode, cache: lookups.cacheOutcomes,
            upstream: lookups.upstreamOutcomes, latency: latency, view: lookups.viewSelected ? lookups.viewName : nil))
        guard let accessLog = configuration.accessLog else { return }
        let micro = latency.components.seconds * 1_000_000 + latency.components.attoseconds / 1_000_000_000_000
        accessLog.log(HTTPDNSAccessLogLine(
            timeMicroseconds: HTTPDNSLogText.now(), client: clientAddress(of: request),
            httpProtocol: request.isQUIC ? .doq : request.isMessage ? .dot : request.httpVersion == "HTTP/2" ? .h2 : .h1, endpoint: endpoint, name: lookups.name,
            type: lookups.type, status: response.status, rcode: lookups.rcode, answers: lookups.answers,
            cache: lookups.firstCacheOutcome, latencyMicroseconds: Int(micro), view: lookups.viewSelected ? lookups.viewName : nil))
    }

    /// Connection events of the HTTP server, counted in `metrics`.
    static func connectionEvents(_ metrics: HTTPDNSServerMetrics) -> @Sendable (HTTPServer.ConnectionEvent) -> Void {
        { event in
            switch event {
            case .opened: metrics.connectionOpened()
            case .closed: metrics.connectionClosed()
            case .refusedConnections: metrics.shed(.connections)
            case .refusedPerClient: metrics.shed(.perClient)
            case .refusedStream: metrics.shed(.streams)
            case .requestDeadline: metrics.shed(.deadline)
            case .drainCut: metrics.shed(.drain)
            }
        }
    }

    /// PROXY protocol v1/v2 from `trusted` peers, when it is there (a balancer may send only
    /// `X-Forwarded-For`). Anyone else's header is dropped and ignored, as httpdns-serve(8) promises:
    /// answered by the peer, not refused as a broken HTTP request.
    static func proxyProtocol(trusting trusted: HTTPDNSTrustedProxies) -> HTTPServer.ProxyProtocol {
        HTTPServer.ProxyProtocol(
            expects: { _, peer in trusted.contains(peer) },
            parse: { bytes in
                // HTTP starts with a method, TLS with 0x16, h2c with "PRI": none is a prefix of a
                // PROXY signature, so the first bytes decide.
                let v1 = Array("PROXY ".utf8)
                let v2 = PROXYProtocolHeader.v2Signature
                let prefix = Array(bytes.prefix(v2.count))
                let mayBeV1 = prefix.starts(with: v1.prefix(prefix.count)) || Array(prefix.prefix(v1.count)) == v1
                let mayBeV2 = v2.starts(with: prefix)
                guard mayBeV1 || mayBeV2 else { return .absent }
                switch PROXYProtocolHeader.parse(bytes) {
                case .needMore: return .needMore
                case .invalid: return .invalid
                case .header(let source, let port, let consumed): return .header(length: consumed, source: source, port: Int(port))
                case .local(let consumed): return .header(length: consumed, source: nil, port: 0)
                }
            })
    }
}
