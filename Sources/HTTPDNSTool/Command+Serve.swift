import DNSSockets
import DNSZoneTransfer
import Foundation
import HTTPDNS
import HTTPDNSCore
import HTTPDNSFleet
import HTTPDNSServer
import HTTPDNSTransport
import HTTPServing

extension Command {
    static let serveSpecs: [OptionSpec] = [
        OptionSpec("listen", value: "[http://|https://|tls://|quic://]ip:port", help: """
            Where to listen (repeatable: HTTP, HTTPS, DNS over TLS and DNS over QUIC in one process). IP:PORT or [IPv6]:PORT; port 0 picks \
            one. https://, tls:// and quic:// need --tls-cert/--tls-key. When no --listen names a scheme, all are HTTPS if \
            --tls-cert is given and plain HTTP otherwise; when one does, those without a scheme are plain. Plain listeners speak HTTP/1.1 and h2c, HTTPS ones HTTP/2 and HTTP/1.1 (ALPN). \
            tls:// speaks DNS over TLS (RFC 7858; Android's Private DNS, Unbound's and systemd-resolved's forwarding use port 853), \
            answering each query as /dns-query does; quic:// speaks DNS over QUIC (RFC 9250, UDP, ALPN doq), \
            each query on a QUIC stream of its own, answered the same way. \
            Default 127.0.0.1:8053.
            """),
        OptionSpec("zone", value: "file", reloads: true, help: """
            A JSON zone of names answered here: {"www.example.test": {"A": ["192.0.2.1"], "AAAA": [...], \
            "ttl": 60}, "*.example.test": {...}, "alias.example.test": {"CNAME": "www.example.test"}}. \
            Default none.
            """),
        OptionSpec("views", value: "file", reloads: true, help: """
            Answers by client network: a JSON file of views, {"geoip": ["country.mmdb", "asn.mmdb"], "views": \
            [{"name": "carrier-a", "lists": ["carrier-a.txt"], "networks": ["10.1.0.0/16"], "countries": ["CN"], \
            "asns": [4134]}]} (paths relative to it; lists hold one CIDR a line, # comments). The most specific \
            match wins; zone entries give records per view ("views": {"carrier-a": {"A": [...]}}); other clients \
            get the default view. The client is the query's EDNS Client Subnet, else ip=, else the trusted \
            proxy's word, else the peer. With the zone, all or nothing. Default none.
            """),
        OptionSpec("upstream", value: "kind=url", help: """
            A resolver for names the zone lacks, tried in order (repeatable; the kinds of --provider). \
            Without one, such names get NXDOMAIN. The server never asks the machine's own resolver. Default none.
            """),
        OptionSpec("tls-cert", value: "file", reloads: true, help: "PEM certificate chain for HTTPS and DNS-over-TLS listeners. Default none."),
        OptionSpec("tls-key", value: "file", reloads: true, help: "PEM private key for --tls-cert. Default none."),
        OptionSpec("secondary", value: "zone=primary[,primary]", help: """
            Follow ZONE on its primaries (IP, IP:PORT or [IPv6]:PORT; port 53 by default) as a DNS secondary: AXFR, \
            then IXFR at the SOA's refresh (retry after a failure); A, AAAA and CNAME records are answered, and \
            --zone becomes an overlay giving transferred names their checks and views. /ready answers 503 until \
            every zone has loaded. Repeatable. Default none.
            """),
        OptionSpec("secondary-dir", value: "dir", help: """
            Keep each --secondary zone's last good copy in DIR (ZONE.httpdns-zone, written atomically with a \
            SHA-256 digest; its modification time is when a primary last confirmed it): after a restart with \
            every primary unreachable the copy is served until its SOA expire has passed. Default none.
            """),
        OptionSpec("notify-listen", value: "ip:port", help: """
            Take NOTIFY messages from the --secondary primaries over UDP and TCP here ([IPv6]:PORT for IPv6; port \
            0 picks one, printed as "notify on udp://IP:PORT"): a zone's primary (the address --secondary gives: \
            Knot's via:, BIND's notify-source), signed with --tsig-file when one is given, has the zone checked \
            at once instead of at its next refresh. Default none.
            """),
        OptionSpec("tsig-file", value: "file", help: """
            The TSIG key (HMAC-SHA256) that signs the --secondary transfers, as tsig-keygen writes it \
            (key "name" { algorithm hmac-sha256; secret "..."; };). Default none: unsigned transfers.
            """),
        OptionSpec("tls-ticket-keys", value: "file", reloads: true, help: """
            TLS session ticket keys shared with the fleet's other instances, so that a client resumes its \
            session on any of them: one base64 key of 80 bytes a line (openssl rand 80 | base64 -w0), the \
            first encrypting, every one decrypting. Default none (a random key per process).
            """),
        OptionSpec("threads", value: "n", help: """
            Event-loop threads (1-256), each serving its share of the connections. Default one fewer than the \
            CPUs this process may run on (its affinity: taskset, a container's cpuset), at least 1: the CPU \
            left takes upstream lookups, logging and the kernel's network work (\(HTTPDNSService.Connections.defaultThreads) here).
            """),
        OptionSpec("reuse-port", help: "Set SO_REUSEPORT so that several instances share one port. Default off."),
        OptionSpec("max-connections", value: "n", help: "Open connections in all; more get a 503 (TLS: closed). Default \(serveDefaults.connections.maxConnections)."),
        OptionSpec("max-connections-per-client", value: "n", help: "Open connections from one client address. Default \(serveDefaults.connections.maxConnectionsPerClient)."),
        OptionSpec("request-timeout", value: "seconds", help: """
            HTTP/1: deadline for a request's head and body (slowloris: cut, counted as shed, plain \
            clients read 408), and the idle time of a keep-alive connection. Default \(helpSeconds(serveDefaults.connections.requestTimeout)).
            """),
        OptionSpec("handshake-timeout", value: "seconds", help: "Deadline for a TLS handshake. Default \(helpSeconds(serveDefaults.connections.handshakeTimeout))."),
        OptionSpec("idle-timeout", value: "seconds", help: "HTTP/2: idle time of a connection. Default \(helpSeconds(serveDefaults.connections.idleTimeout))."),
        OptionSpec("dot-idle-timeout", value: "seconds", help: """
            DNS over TLS: how long a connection with no query in hand stays open (RFC 7766 asks for seconds), and \
            the deadline for the rest of a query begun (cut, counted as shed). DNS over QUIC: the connection's idle timeout. Default \(helpSeconds(serveDefaults.connections.dotIdleTimeout)).
            """),
        OptionSpec("dot-max-queries", value: "n", help: """
            DNS over TLS: pipelined queries of one connection answered at once (1-65535); at this many the \
            connection is not read until one is answered (none is refused). DNS over QUIC: the streams (queries) one \
            connection may have open at once. Default \(serveDefaults.connections.maxDoTQueriesInFlight).
            """),
        OptionSpec("max-streams", value: "n", help: """
            HTTP/2: requests of one connection handled at once (1-100); more get 503 with Retry-After, \
            counted as shed. Default \(serveDefaults.connections.maxConcurrentStreams).
            """),
        OptionSpec("drain-timeout", value: "seconds", help: """
            On SIGTERM/SIGINT: how long the drain may answer requests in flight or on their way (keep-alive \
            connections close once quiet); connections still busy then are cut, and stderr says how many. \
            Default \(helpSeconds(serveDefaults.connections.drainTimeout)).
            """),
        OptionSpec("drain-delay", value: "seconds", help: """
            On SIGTERM/SIGINT: how long /ready answers 503 before the drain begins, the listeners still \
            accepting: longer than a balancer's health checks take to see it (interval x fall), so that it \
            stops sending before they close. Default \(helpSeconds(serveDefaults.connections.drainDelay)).
            """),
        OptionSpec("access-log", value: "file", reloads: true, help: """
            One JSON line per answered request (time, client, protocol, endpoint, name, type, status, rcode, \
            answers, cache, latency) appended to FILE, or stdout for -; reopened (logrotate). Default none.
            """),
        OptionSpec("trusted-proxy", value: "cidr", help: """
            A balancer whose client address is believed (repeatable): its PROXY protocol v1/v2 header, or \
            else its X-Forwarded-For, names the client for Alibaba's client_ip, DNSPod's clientip=1 and the \
            EDNS Client Subnet sent upstream. Default none: the client is the connection's peer.
            """),
        OptionSpec("dnspod-key", value: "id=key", help: """
            A DNSPod enterprise account (repeatable): requests with id=ID and alg=des|aes have dn decrypted \
            and the answer encrypted with KEY. Default none.
            """),
        OptionSpec("alibaba-secret", value: "account=secret", help: """
            An Alibaba account's signing secret (repeatable): /ACCOUNT/sign_d and sign_resolve then verify \
            the MD5 signature and expiry. Default none.
            """),
        OptionSpec("allow-private", help: "Pass on loopback and private addresses from upstreams (test beds). Default off."),
        OptionSpec("cacert", value: "file", help: "PEM CA certificates trusted for TLS to upstreams, in addition to the system's. Default none."),
        OptionSpec("timeout", value: "seconds", help: """
            Time limit of each upstream attempt (0-3600). Default \(helpSeconds(HTTPDNSService.Configuration().upstream.timeouts.perAttempt)).
            """),
        OptionSpec("health-ca", value: "file", help: """
            PEM CA certificates that verify the zone's tls and https checks (only these; verification \
            is always on). Default the system's.
            """),
        OptionSpec("max-probes", value: "n", help: "Health probes running at once (1-10000); due probes wait for a slot. Default \(serveDefaults.health.maxProbesInFlight)."),
        OptionSpec("admin-token", value: "token", help: """
            Token of GET /status, the operator console (origins and checks, report decisions by view, zones \
            and serials, Redis, queries by view and format, load shed; JSON, or an HTML page that refreshes \
            itself for a browser): sent as Authorization: Bearer TOKEN or as the HTTP Basic password (any \
            user); 16-512 printable characters; it shows in the process list, so prefer a config file's \
            adminToken on shared machines. Without it /status answers 404. Default none.
            """),
        OptionSpec("config", value: "file", help: """
            A JSON config file; its "serve" object takes every option above by its key (CONFIG KEYS below), \
            paths relative to the file; options on the command line win. Default none.
            """),
    ] + serveReportSpecs + [HelpText.helpOption]

    /// The library's defaults, which --help shows (the CLI keeps them: one place says each).
    static let serveDefaults = HTTPDNSService.Configuration()

    /// `--listen`'s default.
    static let serveDefaultListen = "127.0.0.1:8053"

    /// The config file's "serve" object, read against ``serveSpecs`` (one row per setting).
    static let serveConfig = ConfigSection(
        name: "serve", options: serveSpecs,
        listKeys: [
            "listen": "listen", "upstream": "upstreams", "secondary": "secondaries", "trusted-proxy": "trustedProxies",
            "dnspod-key": "dnspodKeys", "alibaba-secret": "alibabaSecrets", "report-token": "reportTokens",
        ],
        pathOptions: ["zone", "views", "tls-cert", "tls-key", "tls-ticket-keys", "secondary-dir", "tsig-file", "access-log", "cacert", "health-ca"])

    static let serveHelp = HelpText(
        overview: """
            Run an HTTPDNS server: answers DNSPod (/d?dn=), Alibaba (/ACCOUNT/d?host=), IP-list (/ips?host=) \
            and DNS-over-HTTPS (/dns-query, wire and JSON) requests from a zone file and upstream resolvers, \
            and DNS over TLS (--listen tls://) and over QUIC (--listen quic://) as /dns-query answers, \
            and takes apps' failure reports (POST /report), \
            over HTTP/1.1 and HTTP/2 on --threads event loops. /health answers 200 "alive" while the process answers \
            (liveness), /ready 200 "ready" (503 "draining" while stopping: readiness), /metrics Prometheus text, /status (with --admin-token) the health of checked origins. \
            Zone entries with a "check" have their addresses probed; a down address leaves the answers \
            (unless all of a name's are down). SIGHUP reloads the zone, the views, the certificate and the TLS ticket keys (a bad new one is refused, the old one kept, \
            and the reason printed). SIGTERM or SIGINT turns /ready to 503 (for --drain-delay before the rest), stops accepting, \
            lets requests in flight finish within --drain-timeout, then exits 0.
            """,
        usage: "httpdns serve [<options>]",
        options: serveSpecs,
        sections: [
            ("OUTPUT", "One line per listener when ready: listening on http(s)://IP:PORT, tls://IP:PORT for DNS over TLS, or quic://IP:PORT for DNS over QUIC"),
            ("EXIT STATUS", "0 after a clean stop, 1 when it cannot listen or load the zone, 64 bad usage."),
            ("CONFIG KEYS", "The \"serve\" object of --config FILE takes: \(serveConfig.reference)."),
            ("EXAMPLES", """
                httpdns serve --zone zone.json --upstream doh=https://dns.example/dns-query
                httpdns serve --listen 127.0.0.1:8053 --listen https://0.0.0.0:443 --tls-cert cert.pem --tls-key key.pem --zone zone.json
                httpdns serve --listen 0.0.0.0:8053 --reuse-port --zone zone.json   # run N of these on one port
                """),
        ])

    /// `httpdns serve`.
    static func serve(_ arguments: [String]) async throws -> Int32 {
        let command = "httpdns serve"
        guard var parsed = try parse(arguments, command: command, help: serveHelp) else { return ExitStatus.success }
        func bad(_ message: String) -> UsageError { UsageError(message, command: command) }
        guard parsed.positionals.isEmpty else { throw bad("unexpected argument '\(parsed.positionals[0])'") }
        var config = ConfigFile()
        if let path = parsed.last("config") { config = try ConfigFile.load(path: path, command: command) }
        // The "serve" object: every option by its key, under the flags given here.
        try serveConfig.merge(config, into: &parsed, command: command)
        // SIGHUP's reach is the table's: a row marked `reloads` that the reload does not handle
        // (or the other way round) is a defect of this program, found by any start.
        precondition(Set(serveSpecs.filter(\.reloads).map(\.long)) == ReloadFiles.handled, "serve's SIGHUP rows and its reload disagree")

        var configuration = HTTPDNSService.Configuration()
        let certificate = parsed.last("tls-cert")
        let key = parsed.last("tls-key")
        guard (certificate == nil) == (key == nil) else { throw bad("--tls-cert and --tls-key go together") }
        let listens = parsed.has("listen") ? parsed.all("listen") : [serveDefaultListen]
        var tlsListeners: [Int] = []
        configuration.listeners = []
        let parsedListens = try listens.map { text in
            guard let parsedListen = parseListen(text) else {
                throw bad("bad --listen '\(text)': expected [http://|https://|tls://|quic://]IP:PORT ([IPv6]:PORT for IPv6)")
            }
            return (text, parsedListen)
        }
        // Without any scheme written, a certificate makes every listener HTTPS (one --listen and
        // --tls-cert, as before); once one listener names its scheme, the others are plain.
        let anyScheme = parsedListens.contains { $0.1.2 != nil }
        for (text, (address, port, scheme)) in parsedListens {
            let dot = scheme == "tls"
            let doq = scheme == "quic"
            let tls = dot || doq || scheme == "https" || (scheme == nil && !anyScheme && certificate != nil)
            if tls, certificate == nil {
                let kind = dot ? "DNS over TLS" : doq ? "DNS over QUIC" : "HTTPS"
                throw bad("--listen '\(text)' is \(kind): it needs --tls-cert and --tls-key")
            }
            if tls { tlsListeners.append(configuration.listeners.count) }
            let listenerKind: HTTPDNSService.Listener.Kind = dot ? .dnsOverTLS : doq ? .dnsOverQUIC : .http
            configuration.listeners.append(HTTPDNSService.Listener(address: address, port: port, kind: listenerKind))
        }
        try readConnectionOptions(parsed, into: &configuration.connections, bad: bad)

        var givenTimeout = config.timeout
        if let text = parsed.last("timeout") {
            guard let seconds = Double(text), seconds > 0, seconds <= 3_600 else { throw bad("bad --timeout '\(text)'") }
            givenTimeout = seconds
        }
        let trust = try SharedOptions.makeTrust(cacert: parsed.last("cacert") ?? config.cacert, command: command)
        let transport = HTTPTransport()
        // The library's per-attempt limit unless one is given: --help shows the same default.
        let timeout = givenTimeout ?? configuration.upstream.timeouts.perAttempt.inSeconds
        let upstreams = parsed.all("upstream")
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
        if let path = parsed.last("health-ca") {
            guard let pem = FileManager.default.contents(atPath: path), pem.count <= 16 << 20,
                String(decoding: pem, as: UTF8.self).contains("-----BEGIN CERTIFICATE-----")
            else { throw bad("cannot read --health-ca file \(path) (PEM certificates)") }
            configuration.health.trust = .caFile(path)
        }
        if let text = parsed.last("max-probes") {
            guard let value = Int(text), (1...10_000).contains(value) else { throw bad("bad --max-probes '\(text)'") }
            configuration.health.maxProbesInFlight = value
        }
        if let token = parsed.last("admin-token") {
            guard (16...512).contains(token.utf8.count), token.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7f }) else {
                throw bad("bad --admin-token: 16 to 512 printable ASCII characters without spaces")
            }
            configuration.admin.token = token
        }
        try readReportOptions(parsed, into: &configuration.reports, bad: bad)
        let allowPrivate = parsed.flag("allow-private") || (config.allowPrivate ?? false)
        configuration.upstream.hygiene = HTTPDNSAnswerHygiene(allowPrivate: allowPrivate)

        let tlsFiles = certificate.flatMap { certificate in key.map { (certificate: certificate, key: $0) } }
        if let tlsFiles {
            let (pem, keyPEM) = try readTLS(tlsFiles)
            for index in tlsListeners {
                configuration.listeners[index].tlsCertificatePEM = pem
                configuration.listeners[index].tlsKeyPEM = keyPEM
            }
        }
        let ticketKeysPath = parsed.last("tls-ticket-keys")
        if let ticketKeysPath {
            guard !tlsListeners.isEmpty else { throw bad("--tls-ticket-keys needs an HTTPS --listen") }
            do {
                configuration.tlsTicketKeys = try HTTPDNSTLSTicketKeys(contentsOfFile: ticketKeysPath)
            } catch {
                throw ToolFailure(error.detail)
            }
        }
        var tsigKey: DNSTSIGKey?
        if let path = parsed.last("tsig-file") {
            guard parsed.has("secondary") else { throw bad("--tsig-file signs --secondary transfers: give a --secondary") }
            do throws(HTTPDNSFleetError) {
                tsigKey = try HTTPDNSSecondary.Configuration.tsigKey(file: path)
            } catch {
                throw ToolFailure(error.detail)
            }
        }
        let notifyAddress = try parsed.last("notify-listen").map { text in
            guard !parsed.all("secondary").isEmpty else { throw bad("--notify-listen takes NOTIFY for --secondary zones: give a --secondary") }
            guard let (address, port) = HTTPDNSIPAddress.parseEndpoint(Substring(text), allowsPortZero: true) else {
                throw bad("bad --notify-listen '\(text)': expected IP:PORT ([IPv6]:PORT for IPv6)")
            }
            return (address, port)
        }
        let secondaryDirectory = try parsed.last("secondary-dir").map { path in
            guard parsed.has("secondary") else { throw bad("--secondary-dir keeps --secondary zones: give a --secondary") }
            var isDirectory: ObjCBool = false
            if !FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) {
                do {
                    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
                } catch {
                    throw ToolFailure("cannot create --secondary-dir \(path): \(error.localizedDescription)")
                }
            } else if !isDirectory.boolValue {
                throw ToolFailure("--secondary-dir \(path) is not a directory")
            }
            guard access(path, W_OK | X_OK) == 0 else { throw ToolFailure("--secondary-dir \(path) is not writable") }
            return path
        }
        var secondaryZones: [HTTPDNSSecondary.Configuration] = []
        for spec in parsed.all("secondary") {
            do throws(HTTPDNSFleetError) {
                secondaryZones.append(try HTTPDNSSecondary.Configuration(spec: spec, key: tsigKey))
            } catch {
                throw bad(error.detail)
            }
        }
        let zonePath = parsed.last("zone")
        let viewsPath = parsed.last("views")
        if let viewsPath {
            do {
                configuration.views = try HTTPDNSViews(contentsOfFile: viewsPath)
            } catch {
                throw ToolFailure("cannot load views: \(error.detail)")
            }
        }
        // Views with transfers of their own follow every --secondary zone with their key.
        let zoneTransfers = secondaryZones
        for view in configuration.views.views {
            guard let transfer = view.transfer else { continue }
            guard !zoneTransfers.isEmpty else { throw bad("view \(view.name) in \(viewsPath ?? "--views") has a \"transfer\": give a --secondary") }
            do throws(HTTPDNSFleetError) {
                let key = try HTTPDNSSecondary.Configuration.tsigKey(file: transfer.tsigKeyFile)
                for zone in zoneTransfers {
                    var viewTransfer = transfer.primaries.isEmpty ? zone
                        : try HTTPDNSSecondary.Configuration(spec: zone.zone.text() + "=" + transfer.primaries.joined(separator: ","), key: key)
                    viewTransfer.key = key
                    viewTransfer.view = view.name
                    secondaryZones.append(viewTransfer)
                }
            } catch {
                throw ToolFailure("view \(view.name): \(error.detail)")
            }
        }
        if let zonePath {
            do {
                configuration.zone = try HTTPDNSZone(contentsOfFile: zonePath)
                try configuration.views.check(configuration.zone)
            } catch {
                throw ToolFailure("cannot load zone \(zonePath): \(error.detail)")
            }
        } else if upstreams.isEmpty, secondaryZones.isEmpty {
            Output.diagnostic("httpdns: warning: no --zone and no --upstream: every name gets NXDOMAIN")
        }
        // With secondaries the JSON zone is their overlay, not served by itself.
        let overlay = configuration.zone
        if !secondaryZones.isEmpty { configuration.zone = HTTPDNSZone() }

        do {
            configuration.trustedProxies = try HTTPDNSTrustedProxies(parsed.all("trusted-proxy"))
        } catch {
            throw bad("bad --trusted-proxy: \(error.detail)")
        }
        if zonePath != nil, secondaryZones.isEmpty { configuration.metrics.zoneLoaded(names: configuration.zone.entries.count) }
        if let path = parsed.last("access-log") {
            do {
                configuration.accessLog = try HTTPDNSAccessLog(path: path, metrics: configuration.metrics)
            } catch {
                throw ToolFailure("cannot open --access-log \(path): \(error.detail)")
            }
        }
        let service = HTTPDNSService(configuration: configuration)
        // Before the service listens, so that /ready waits for the zones from its first answer.
        let secondaries = secondaryZones.isEmpty ? nil : HTTPDNSSecondaryZones(
            secondaryZones, overlay: overlay, service: service, directory: secondaryDirectory,
            monitor: HTTPDNSZoneFollowerLines { Output.diagnostic("httpdns: " + $0) })
        do {
            try service.start()
        } catch {
            throw ToolFailure("cannot serve: \(error.detail)")
        }
        secondaries?.start()
        defer { secondaries?.stop() }
        var notifyBound: String?
        if let secondaries, let (address, port) = notifyAddress {
            do throws(HTTPDNSFleetError) {
                let bound = try secondaries.listenForNotify(on: SocketAddress(address: address, port: port))
                notifyBound = "\(bound.address.uriText):\(bound.port)"
            } catch {
                service.stop()
                throw ToolFailure(error.detail)
            }
        }
        let files = ReloadFiles(zone: zonePath, views: viewsPath, tls: tlsFiles, ticketKeys: ticketKeysPath, secondaries: secondaries)
        try await runUntilStopped(service, files: files, tlsListeners: tlsListeners) {
            if let notifyBound { try Output.line("notify on udp://\(notifyBound)") }
            for (index, listener) in configuration.listeners.enumerated() {
                let scheme = listener.kind == .dnsOverTLS ? "tls" : listener.kind == .dnsOverQUIC ? "quic" : listener.tlsCertificatePEM == nil ? "http" : "https"
                try Output.line("listening on \(scheme)://\(listener.address.uriText):\(service.ports[index])")
            }
        }
        return ExitStatus.success
    }

    /// The connection bounds from their options.
    static func readConnectionOptions(
        _ parsed: ParsedArguments, into connections: inout HTTPDNSService.Connections, bad: (String) -> UsageError
    ) throws {
        func count(_ name: String, _ range: ClosedRange<Int>) throws -> Int? {
            guard let text = parsed.last(name) else { return nil }
            guard let value = Int(text), range.contains(value) else { throw bad("bad --\(name) '\(text)'") }
            return value
        }
        func seconds(_ name: String) throws -> Duration? {
            guard let text = parsed.last(name) else { return nil }
            guard let value = Double(text), value > 0, value <= 86_400 else { throw bad("bad --\(name) '\(text)'") }
            return .milliseconds(Int64(value * 1000))
        }
        if let value = try count("max-connections", 1...1_000_000) { connections.maxConnections = value }
        if let value = try count("max-connections-per-client", 1...1_000_000) { connections.maxConnectionsPerClient = value }
        if let value = try count("max-streams", 1...HTTPServer.Limits.streamCeiling) { connections.maxConcurrentStreams = value }
        if let value = try count("threads", 1...HTTPServer.Configuration.maxThreads) { connections.threads = value }
        if let value = try seconds("request-timeout") { connections.requestTimeout = value }
        if let value = try seconds("handshake-timeout") { connections.handshakeTimeout = value }
        if let value = try seconds("idle-timeout") { connections.idleTimeout = value }
        if let value = try seconds("dot-idle-timeout") { connections.dotIdleTimeout = value }
        if let value = try count("dot-max-queries", 1...65_535) { connections.maxDoTQueriesInFlight = value }
        if let value = try seconds("drain-timeout") { connections.drainTimeout = value }
        if let text = parsed.last("drain-delay") {
            guard let value = Double(text), value >= 0, value <= 3_600 else { throw bad("bad --drain-delay '\(text)'") }
            connections.drainDelay = .milliseconds(Int64(value * 1000))
        }
        connections.reusePort = parsed.flag("reuse-port")
    }

    /// The certificate and key files' text.
    static func readTLS(_ files: (certificate: String, key: String)) throws -> (String, String) {
        guard let pem = try? String(contentsOfFile: files.certificate, encoding: .utf8) else {
            throw ToolFailure("cannot read --tls-cert \(files.certificate)")
        }
        guard let keyPEM = try? String(contentsOfFile: files.key, encoding: .utf8) else {
            throw ToolFailure("cannot read --tls-key \(files.key)")
        }
        return (pem, keyPEM)
    }

    /// The files SIGHUP reads again.
    struct ReloadFiles {
        /// The options whose files ``reload(_:files:tlsListeners:)`` reads again: exactly the rows
        /// of ``serveSpecs`` marked `reloads` (checked at start, so the help cannot promise more).
        static let handled: Set<String> = ["zone", "views", "tls-cert", "tls-key", "tls-ticket-keys", "access-log"]

        var zone: String?
        var views: String?
        var tls: (certificate: String, key: String)?
        var ticketKeys: String?
        /// The zones followed on primaries; the zone file is then their overlay.
        var secondaries: HTTPDNSSecondaryZones<HTTPDNSService>?
    }

    /// Says it is ready with `announce`, then serves until SIGINT or SIGTERM (then drains and
    /// stops); SIGHUP reloads the zone with the views, the certificate and the TLS ticket keys, each
    /// only when the new one is valid.
    ///
    /// The signals are watched before `announce` prints `listening on`: a supervisor (or a test)
    /// may signal as soon as it reads that line, and a signal that came before the watcher ended
    /// the process (SIGHUP) or was lost.
    static func runUntilStopped(
        _ service: HTTPDNSService, files: ReloadFiles, tlsListeners: [Int], announce: () throws -> Void
    ) async throws {
        let (stops, stop) = AsyncStream.makeStream(of: Void.self)
        let watcher = try SignalWatcher([SIGINT, SIGTERM, SIGHUP]) { signal in
            if signal == SIGHUP {
                reload(service, files: files, tlsListeners: tlsListeners)
            } else {
                stop.yield()
            }
        }
        defer { watcher.stop() }
        try announce()
        for await _ in stops { break }
        service.stop()
        // Said here as `httpdns proxy` says it: once the drain has ended, /metrics (the counter's
        // other reader) can no longer be asked.
        let cut = service.metrics.shedCount(.drain)
        if cut > 0 { Output.diagnostic("httpdns: the drain cut \(cut) connection\(cut == 1 ? "" : "s") still busy at --drain-timeout") }
        _ = service.configuration.accessLog?.close()
    }

    /// SIGHUP: the zone, the views (their lists and MaxMind DB files) and the certificate are read
    /// and checked whole before any replaces the old; the zone and the views go in together or not
    /// at all, so that no request sees a zone naming views the service lacks.
    static func reload(_ service: HTTPDNSService, files: ReloadFiles, tlsListeners: [Int]) {
        let tlsFiles = files.tls
        if files.zone != nil || files.views != nil {
            let what = [files.zone.map { "zone \($0)" }, files.views.map { "views \($0)" }].compactMap { $0 }.joined(separator: " and ")
            do throws(HTTPDNSServiceError) {
                let views = try files.views.map { path throws(HTTPDNSServiceError) in try HTTPDNSViews(contentsOfFile: path) }
                let zone = try files.zone.map { path throws(HTTPDNSServiceError) in
                    do throws(HTTPDNSServiceError) {
                        return try HTTPDNSZone(contentsOfFile: path)
                    } catch {
                        throw HTTPDNSServiceError(error.code, "\(path): \(error.detail)")
                    }
                }
                if let secondaries = files.secondaries {
                    if let views { try service.reload(zone: service.zone, views: views) }
                    if let zone {
                        do throws(HTTPDNSFleetError) {
                            try secondaries.reload(overlay: zone)
                        } catch {
                            throw HTTPDNSServiceError(.invalidZone, error.detail)
                        }
                    }
                } else {
                    try service.reload(zone: zone ?? service.zone, views: views)
                    if let zone { service.metrics.zoneLoaded(names: zone.entries.count) }
                }
                Output.diagnostic("httpdns: reloaded \(what)")
            } catch {
                service.metrics.zoneLoadFailed()
                Output.diagnostic("httpdns: reload: keeping the old \(files.zone == nil ? "views" : files.views == nil ? "zone" : "zone and views"): \(error.detail)")
            }
        }
        if let accessLog = service.configuration.accessLog {
            do {
                try accessLog.reopen()
            } catch {
                Output.diagnostic("httpdns: reload: cannot reopen the access log: \(error.detail)")
            }
        }
        if let tlsFiles {
            do {
                let (pem, key) = try readTLS(tlsFiles)
                for index in tlsListeners {
                    try service.reloadTLS(listener: index, certificatePEM: pem, keyPEM: key)
                }
                Output.diagnostic("httpdns: reloaded certificate \(tlsFiles.certificate)")
            } catch let error as HTTPDNSServiceError {
                Output.diagnostic("httpdns: reload: keeping the old certificate: \(error.detail)")
            } catch {
                Output.diagnostic("httpdns: reload: keeping the old certificate: \(error)")
            }
        }
        if let path = files.ticketKeys {
            do throws(HTTPDNSServiceError) {
                try service.reloadTLSTicketKeys(try HTTPDNSTLSTicketKeys(contentsOfFile: path))
                Output.diagnostic("httpdns: reloaded TLS ticket keys \(path)")
            } catch {
                Output.diagnostic("httpdns: reload: keeping the old TLS ticket keys: \(error.detail)")
            }
        }
    }

    /// `NAME=VALUE` with a non-empty name.
    static func splitPair(_ text: String) -> (String, String)? {
        guard let equals = text.firstIndex(of: "="), equals != text.startIndex else { return nil }
        return (String(text[..<equals]), String(text[text.index(after: equals)...]))
    }

    /// `[http://|https://|tls://|quic://]IP:PORT` or `…[IPv6]:PORT`, port 0-65535 (0 picks a free
    /// one); the scheme is nil when not written.
    static func parseListen(_ text: String) -> (HTTPDNSIPAddress, Int, String?)? {
        var rest = Substring(text)
        var scheme: String?
        for candidate in ["http", "https", "tls", "quic"] where rest.hasPrefix(candidate + "://") {
            scheme = candidate
            rest = rest.dropFirst(candidate.count + 3)
        }
        guard let (address, port) = HTTPDNSIPAddress.parseEndpoint(rest, allowsPortZero: true) else { return nil }
        return (address, Int(port), scheme)
    }
}
