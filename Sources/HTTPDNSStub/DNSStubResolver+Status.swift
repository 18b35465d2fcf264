import HTTPDNSCore
import HTTPDNSOperations

extension DNSStubResolver {
    /// The stub's status document (`/status` on the `--metrics` listener): every upstream of every
    /// group in the order it is asked now, with its counts, smoothed RTT and failure score; the
    /// caches; and the queries by transport and source. Counts need `--metrics` (they are its
    /// counters); without it they read 0.
    package func statusDocument() -> HTTPDNSStatusValue {
        let counts = metrics?.snapshot()
        let now = self.now
        let groups = [("default", upstreams)] + zip(routes.routes, routeUpstreams).map { ($0.patterns, $1) }
        var rows: [HTTPDNSStatusValue] = []
        for (group, members) in groups {
            let ranking = members.currentRanking
            for (rank, index) in ranking.order(now: now).enumerated() {
                let name = members.upstreams[index].name
                let recorded = counts?.upstreams[name]
                var row: [(String, HTTPDNSStatusValue)] = [
                    ("group", .string(group)), ("rank", .integer(rank + 1)),
                    ("kind", .string(name.split(separator: "=", maxSplits: 1).first.map(String.init) ?? name)),
                    ("upstream", .string(name)),
                ]
                for (slot, result) in DNSStubMetrics.Result.allCases.enumerated() {
                    row.append((result.rawValue, .integer(recorded?.results[slot] ?? 0)))
                }
                row += [
                    ("hedged", .integer(recorded?.hedged ?? 0)),
                    ("srttMs", ranking.entries[index].smoothedRTT.map { .decimal($0 * 1_000, digits: 3) } ?? .null),
                    ("failureScore", .decimal(ranking.failureScore(index, now: now), digits: 3)),
                ]
                rows.append(.object(row))
            }
        }
        let queries = counts?.queries ?? []
        return .object([
            ("upstreams", .array(rows)),
            ("caches", .object([
                ("wire", .object([
                    ("entries", .integer(cache.withLock { $0.count })),
                    ("hits", .integer(counts?.count(.cache) ?? 0)), ("stale", .integer(counts?.count(.stale) ?? 0)),
                    ("misses", .integer(counts?.count(.upstream) ?? 0)),
                ])),
                ("packet", .object([("repeated", .integer(counts?.repeated ?? 0)), ("enabled", .bool(repeatsAnswers))])),
                ("engine", .object([
                    ("entries", .integer(engine.cacheEntryCount)), ("answered", .integer(counts?.count(.engine) ?? 0)),
                    ("upstreamLookups", .integer(engine.upstreamLookupCount)),
                ])),
            ])),
            ("queries", .array(queries.map { transport, perSource in
                .object([("transport", .string(transport))] + DNSStubMetrics.Source.allCases.enumerated().map { slot, source in
                    (source.rawValue, HTTPDNSStatusValue.integer(perSource[slot]))
                })
            })),
        ])
    }
}
