import HTTPDNSCore
import HTTPDNSFleet
import HTTPDNSOperations

extension HTTPDNSReports {
    /// Most (address, view) pairs listed in the status section, the most reported first.
    package static let statusPairs = 20

    /// The reports section of the service's status document: settings, what is tracked, every
    /// decision in force, the counts, the reports and decisions by view, and the most reported pairs.
    ///
    /// ```json
    /// {"window":300,"threshold":3,"holdTime":600,"tracked":{"addresses":2,"networks":5},
    ///  "evicted":{"addresses":0,"networks":0,"decisions":0},"probesInFlight":0,
    ///  "decisions":[{"decision":"demoted","address":"192.0.2.1","view":"carrier-a","networks":3,
    ///                "host":"www.example.test","port":443,"since":1796300000,"until":1796300600}],
    ///  "counts":{"accepted":4,…,"down":0,"demoted":1},
    ///  "byView":[{"view":"carrier-a","addresses":1,"networks":3,"down":0,"demoted":1}],
    ///  "busiest":[{"address":"192.0.2.1","view":"carrier-a","networks":3}]}
    /// ```
    package func statusSection() -> HTTPDNSStatusValue {
        let now = clock.now()
        let (aggregator, decisions, probes) = stateSnapshot(now: now)
        let counts = counters.snapshot
        let decisionList = decisions.map { decision -> HTTPDNSStatusValue in
            .object([
                ("decision", .string(decision.kind.rawValue)),
                ("address", .string(decision.address.description)),
                ("view", decision.view.map(HTTPDNSStatusValue.string) ?? .null),
                ("networks", .integer(decision.networks)),
                ("host", .string(decision.host)),
                ("port", .integer(decision.port)),
                ("since", .integer(Int64(decision.since))),
                ("until", .integer(Int64(decision.until))),
            ])
        }
        let pairs = aggregator.busiest(limit: aggregator.trackedKeys, now: now)
        let busiest = pairs.prefix(Self.statusPairs).map { pair -> HTTPDNSStatusValue in
            .object([
                ("address", .string(pair.key.address.description)), ("view", .string(pair.key.view)),
                ("networks", .integer(pair.networks)),
            ])
        }
        var countMembers = HTTPDNSReportCounters.Result.allCases.map { ($0.label, HTTPDNSStatusValue.integer(counts.results[$0.rawValue])) }
        countMembers += [
            ("recorded", .integer(counts.recorded)), ("ignored", .integer(counts.ignored)), ("reachable", .integer(counts.reachable)),
            ("unreachable", .integer(counts.unreachable)), ("skipped", .integer(counts.skipped)), ("down", .integer(counts.down)),
            ("demoted", .integer(counts.demoted)),
        ]
        return .object([
            ("window", .integer(Int64(settings.window.inSeconds))),
            ("threshold", .integer(settings.threshold)),
            ("holdTime", .integer(Int64(settings.holdTime.inSeconds))),
            ("tracked", .object([("addresses", .integer(aggregator.trackedKeys)), ("networks", .integer(aggregator.trackedNetworks))])),
            ("evicted", .object([
                ("addresses", .integer(aggregator.evictedKeys)), ("networks", .integer(aggregator.evictedNetworks)),
                ("decisions", .integer(counts.evictedDecisions)),
            ])),
            ("probesInFlight", .integer(probes)),
            ("decisions", .array(decisionList)),
            ("counts", .object(countMembers)),
            ("byView", Self.byView(pairs: pairs.map { ($0.key.view, $0.networks) }, decisions: decisions)),
            ("busiest", .array(busiest)),
        ])
    }

    /// Per view (sorted by name; a decision about every view is under `*`): the addresses reported
    /// within the window, the networks that reported them, and the decisions in force.
    static func byView(pairs: [(view: String, networks: Int)], decisions: [HTTPDNSReportDecision]) -> HTTPDNSStatusValue {
        var rows: [String: (addresses: Int, networks: Int, down: Int, demoted: Int)] = [:]
        for pair in pairs {
            rows[pair.view, default: (0, 0, 0, 0)].addresses += 1
            rows[pair.view, default: (0, 0, 0, 0)].networks += pair.networks
        }
        for decision in decisions {
            let view = decision.view ?? "*"
            if decision.kind == .down { rows[view, default: (0, 0, 0, 0)].down += 1 } else { rows[view, default: (0, 0, 0, 0)].demoted += 1 }
        }
        return .array(rows.sorted { $0.key < $1.key }.map { view, row in
            .object([
                ("view", .string(view)), ("addresses", .integer(row.addresses)), ("networks", .integer(row.networks)),
                ("down", .integer(row.down)), ("demoted", .integer(row.demoted)),
            ])
        })
    }

    /// The `redis` section of the status document: whether the fleet's Redis is configured, where
    /// (the password as `***`), whether the last exchange worked, its errors and what waits to go.
    package func redisStatus() -> HTTPDNSStatusValue {
        guard let sharer, let redis = settings.redis else { return .object([("configured", .bool(false))]) }
        let errors = sharer.errors
        return .object([
            ("configured", .bool(true)),
            ("endpoint", .string(redis.description)),
            ("state", .string(sharer.isUp ? "connected" : "disconnected")),
            ("lastError", sharer.lastError.map { .string($0.description) } ?? .null),
            ("pending", .bool(sharer.hasPending)),
            ("dropped", .integer(sharer.dropped)),
            ("errors", .object(errors.sorted { $0.key < $1.key }.map { ($0.key, .integer($0.value)) })),
        ])
    }
}
