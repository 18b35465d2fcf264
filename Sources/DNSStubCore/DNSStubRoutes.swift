import HTTPDNSCore
/// `--route PATTERNS=UPSTREAM`: names that belong to someone else's DNS (corporate names behind a
/// VPN, a lab zone) and go to that route's upstreams only, for every type, never to the engine.
///
/// PATTERNS is one or more `--protect` patterns separated by commas, matched by
/// ``HTTPDNSHostPolicy`` (exact names, `*.` wildcards, `*`, and `!pattern` exclusions that win):
/// `*.corp.example,!www.corp.example=udp=10.0.0.1:53` routes every name below `corp.example` but
/// `www.corp.example`, which takes the default path. Several routes with the same PATTERNS form one
/// route whose upstreams are tried in the ranking's order. UPSTREAM is what `--upstream` takes; this
/// type keeps its text and leaves parsing it to the I/O shell.
///
/// When several routes match a name, the most specific wins: the route whose matching inclusion is
/// the longest suffix of the name (an exact name beats any wildcard, `*` is the least specific);
/// equal lengths go to the route given first.
package struct DNSStubRoutes: Sendable {
    /// One route: its patterns and its upstreams, in the order given.
    package struct Route: Sendable {
        /// The PATTERNS text as given, for logs and metrics.
        package var patterns: String
        /// The upstream texts (`udp=IP:PORT`, `doh=URL`).
        package var upstreams: [String]
        let policy: HTTPDNSHostPolicy
        /// Each inclusion alone, to measure how specifically it matches.
        let inclusions: [(pattern: String, policy: HTTPDNSHostPolicy)]
    }

    /// The routes in the order first given.
    package private(set) var routes: [Route] = []

    /// No routes: every name takes the default path.
    package init() {}

    /// Parses each `PATTERNS=UPSTREAM`; the first `=` ends the patterns (patterns never contain one).
    /// - Throws: `HTTPDNSError` `.invalidConfiguration` when a text has no `=`, no inclusion, or an
    ///   empty upstream.
    package init(parsing texts: [String]) throws(HTTPDNSError) {
        for text in texts {
            guard let equals = text.firstIndex(of: "=") else {
                throw HTTPDNSError(.invalidConfiguration, "expected PATTERN=UPSTREAM, got \(text)")
            }
            let patterns = String(text[..<equals])
            let upstream = String(text[text.index(after: equals)...])
            guard !upstream.isEmpty else { throw HTTPDNSError(.invalidConfiguration, "no upstream in \(text)") }
            try add(patterns: patterns, upstream: upstream)
        }
    }

    /// Adds `upstream` to the route of `patterns`, creating it when new.
    /// - Throws: `HTTPDNSError` `.invalidConfiguration` when `patterns` has no inclusion.
    package mutating func add(patterns: String, upstream: String) throws(HTTPDNSError) {
        if let index = routes.firstIndex(where: { $0.patterns == patterns }) {
            routes[index].upstreams.append(upstream)
            return
        }
        let list = patterns.split(separator: ",").map { String($0.filter { $0 != " " }) }.filter { !$0.isEmpty }
        let inclusions = list.filter { !$0.hasPrefix("!") }.map { HTTPDNSHostPolicy.normalize($0) }
        guard !inclusions.isEmpty else {
            throw HTTPDNSError(.invalidConfiguration, "route \(patterns) matches nothing: it needs a pattern without !")
        }
        routes.append(Route(
            patterns: patterns, upstreams: [upstream], policy: HTTPDNSHostPolicy(list),
            inclusions: inclusions.map { ($0, HTTPDNSHostPolicy([$0])) }))
    }

    /// True when no route is configured.
    package var isEmpty: Bool { routes.isEmpty }

    /// The index in ``routes`` of the most specific route for `name`, nil when none matches.
    package func route(for name: String) -> Int? {
        var best: (index: Int, specificity: Int)?
        for (index, route) in routes.enumerated() where route.policy.protects(name) {
            let specificity = route.inclusions.filter { $0.policy.protects(name) }.map { Self.specificity($0.pattern) }.max() ?? 0
            if best == nil || specificity > best!.specificity { best = (index, specificity) }
        }
        return best?.index
    }

    /// Longer suffixes are more specific; an exact name outranks every wildcard.
    static func specificity(_ pattern: String) -> Int {
        if pattern == "*" { return 0 }
        if pattern.hasPrefix("*.") { return pattern.utf8.count - 1 }
        return 1_000 + pattern.utf8.count
    }
}
