import HTTPDNSCore
/// `httpdns stub --check` as a value: where the host's resolver configuration sends names, and
/// whether any of them leave without going through the stub.
///
/// The paths glibc and systemd-resolved take, as modelled here:
/// - glibc asks resolv.conf's nameservers (the first three, port 53) in order and moves to the
///   next one when a server does not answer in time (`options timeout`, default 5 s): one
///   nameserver that is not the stub is enough for names to leak whenever the stub is slow.
/// - resolv.conf at systemd-resolved's stub (127.0.0.53, or 127.0.0.54) hands names to resolved,
///   which asks its `DNS=` servers and each link's (DHCP). With `Domains=~.` its `DNS=` is the
///   route for every name no link claims; without it, links with a default route are asked too
///   (systemd-resolved.service(8), "Protocols and Routing").
///
/// Nothing here reads a file or a socket: the command reads them and passes their text.
package struct DNSStubHostCheck: Sendable, Hashable {
    /// What the command read.
    package struct Inputs: Sendable, Hashable {
        /// `/etc/resolv.conf`'s text; nil when missing (glibc then asks 127.0.0.1).
        package var resolvConf: String?
        /// Where `/etc/resolv.conf` links to, when it is a symbolic link.
        package var resolvConfLink: String?
        /// `resolved.conf`, then each drop-in in lexical order; empty without systemd-resolved.
        package var resolvedConfs: [String] = []
        /// `/run/systemd/resolve/resolv.conf`: every server resolved knows (its own and the links'),
        /// when resolved runs.
        package var resolvedUplinks: String?
        /// Where the stub listens (`--listen`, default 127.0.0.153:53).
        package var listen: DNSStubResolvedConf.Server
        /// Whether a DNS server answered the probe there; nil when not probed.
        package var stubAnswers: Bool?
        /// When it did not: whether the port was closed ("connection refused" at once) rather than
        /// silent for the probe's second.
        package var stubRefused = false

        package init(listen: DNSStubResolvedConf.Server) {
            self.listen = listen
        }
    }

    package enum Verdict: String, Sendable, Hashable {
        case protected
        case partlyProtected = "partly protected"
        case notProtected = "NOT protected"
        /// The host sends every name to the stub, and nothing answers there: every lookup fails
        /// (no leak, but no answer). Its own verdict, so that a health check on `--check` fails.
        case notAnswering = "NOT answering"
    }

    /// What each piece points to, one line each.
    package var lines: [String] = []
    package var verdict: Verdict
    /// `protected: …`, `NOT protected: …`, `partly protected: …`.
    package var verdictLine: String

    /// systemd-resolved's stub addresses: 127.0.0.53 with the search
    /// domains, 127.0.0.54 without (proxy only); both forward to the same servers.
    package static let resolvedStubs = [HTTPDNSIPAddress("127.0.0.53")!, HTTPDNSIPAddress("127.0.0.54")!]

    package init(_ inputs: Inputs) {
        let stub = inputs.listen
        let resolv = DNSStubResolvConf(parsing: inputs.resolvConf ?? "")
        let asked = resolv.effectiveNameservers.map { DNSStubResolvedConf.Server(address: $0) }
        var describe = inputs.resolvConf == nil ? "missing" : asked.map(\.description).joined(separator: ", ")
        if resolv.nameservers.isEmpty { describe += " (no nameserver line: glibc asks 127.0.0.1:53)" }
        if resolv.nameservers.count > DNSStubResolvConf.maxNameservers { describe += "; nameservers past the third are never asked" }
        if let link = inputs.resolvConfLink {
            describe += "; a link to \(link)"
            if link.hasSuffix("/systemd/resolve/stub-resolv.conf") {
                describe += " (systemd-resolved's stub file)"
            } else if link.hasSuffix("/systemd/resolve/resolv.conf") {
                describe += " (systemd-resolved's own servers: glibc asks them directly)"
            }
        }
        lines.append("resolv.conf: nameserver \(describe)")
        let settings = [("search", resolv.search), ("options", resolv.options)].filter { !$0.1.isEmpty }
        if !settings.isEmpty {
            lines.append("resolv.conf: " + settings.map { "\($0.0) \($0.1.joined(separator: " "))" }.joined(separator: "; "))
        }
        if !resolv.ignored.isEmpty { lines.append("resolv.conf: ignored lines: \(resolv.ignored.joined(separator: " | "))") }
        let resolved = DNSStubResolvedConf(parsing: inputs.resolvedConfs)
        if !inputs.resolvedConfs.isEmpty {
            let dns = resolved.dns.isEmpty ? "(none)" : resolved.dns.map(\.description).joined(separator: " ")
            let fallback = resolved.fallbackDNS.map { $0.isEmpty ? "(empty)" : $0.map(\.description).joined(separator: " ") } ?? "(built-in)"
            lines.append("systemd-resolved: DNS=\(dns) Domains=\(resolved.domains.joined(separator: " ")) FallbackDNS=\(fallback) DNSStubListener=\(resolved.stubListener)")
        }
        if let uplinks = inputs.resolvedUplinks {
            let known = DNSStubResolvConf(parsing: uplinks).nameservers.map(\.description)
            lines.append("systemd-resolved: servers in use (/run/systemd/resolve/resolv.conf): \(known.isEmpty ? "(none)" : known.joined(separator: ", "))")
        }
        (verdict, verdictLine) = Self.judge(asked: asked, resolved: resolved, hasResolved: !inputs.resolvedConfs.isEmpty, stub: stub)
        switch inputs.stubAnswers {
        case .none: lines.append("httpdns stub: \(stub) (not probed)")
        case .some(true): lines.append("httpdns stub: \(stub) answers")
        case .some(false):
            let why = inputs.stubRefused ? "connection refused: nothing listens there" : "no reply within 1 s"
            let outcome = verdict == .protected ? ": names would fail, not leak" : ""
            lines.append("httpdns stub: \(stub) does not answer (\(why))\(outcome)")
            if verdict == .protected {
                verdict = .notAnswering
                verdictLine = "NOT answering: every name goes to httpdns stub at \(stub), and nothing answers there (\(why)): every lookup on the host fails"
            }
        }
    }

    /// Whether a query to `server` reaches the stub: the same address and port, or, for a stub on
    /// the unspecified address (`--listen 0.0.0.0:53`, `[::]:53`), any loopback address of that
    /// family on its port but systemd-resolved's (a socket bound to 127.0.0.53 gets its queries
    /// before one bound to every address); the host's other addresses are not known here.
    static func reaches(_ server: DNSStubResolvedConf.Server, _ stub: DNSStubResolvedConf.Server) -> Bool {
        guard server.port == stub.port else { return false }
        guard stub.address.isUnspecified else { return server.address == stub.address }
        return server.address.isLoopback && server.address.family == stub.address.family && !resolvedStubs.contains(server.address)
    }

    /// The verdict and its line.
    private static func judge(
        asked: [DNSStubResolvedConf.Server], resolved: DNSStubResolvedConf, hasResolved: Bool, stub: DNSStubResolvedConf.Server
    ) -> (Verdict, String) {
        let others = asked.filter { !reaches($0, stub) && !resolvedStubs.contains($0.address) }
        if !others.isEmpty {
            let list = others.map(\.description).joined(separator: ", ")
            if others.count < asked.count {
                return (.notProtected, "NOT protected: resolv.conf also lists \(list): glibc asks the next nameserver whenever the one before does not answer in time")
            }
            let port = others.contains { $0.address == stub.address } ? " (resolv.conf can only name port 53; the stub listens on \(stub))" : " (not the stub)"
            return (.notProtected, "NOT protected: resolv.conf sends names to \(list)\(port)")
        }
        guard asked.contains(where: { resolvedStubs.contains($0.address) && !reaches($0, stub) }) else {
            return (.protected, "protected: every name goes to httpdns stub at \(stub)")
        }
        let via = asked.first { resolvedStubs.contains($0.address) && !reaches($0, stub) }!.address
        guard hasResolved else {
            return (.notProtected, "NOT protected: resolv.conf sends names to systemd-resolved at \(via), whose configuration was not found")
        }
        guard resolved.stubListenerEnabled else {
            return (.notProtected, "NOT protected: resolv.conf sends names to \(via) but systemd-resolved's DNSStubListener=\(resolved.stubListener): nothing answers there")
        }
        guard !resolved.dns.isEmpty else {
            return (.notProtected, "NOT protected: systemd-resolved has no DNS=: names go to each link's DNS (DHCP) or to FallbackDNS, not the stub")
        }
        let elsewhere = resolved.dns.filter { !reaches($0, stub) }
        guard elsewhere.isEmpty else {
            return (.notProtected, "NOT protected: systemd-resolved also sends names to \(elsewhere.map(\.description).joined(separator: ", ")) (not the stub)")
        }
        guard resolved.routesEveryName else {
            return (.partlyProtected, "partly protected: systemd-resolved sends names to \(stub) but without Domains=~. it also asks each link's DNS, and names under link domains go only there")
        }
        return (.protected, "protected: every name goes to httpdns stub at \(stub) through systemd-resolved (Domains=~.); names under a link's own domains (resolvectl domain) still go to that link's DNS")
    }
}
