import HTTPDNSCore

extension HTTPDNSReports {
    /// Most (address, view) pairs listed in the status section, the most reported first.
    package static let statusPairs = 20

    /// The reports section of the service's status document (a JSON object): settings, what is
    /// tracked, every decision in force, the counts, and the most reported pairs.
    ///
    /// ```json
    /// {"window":300,"threshold":3,"holdTime":600,"tracked":{"addresses":2,"networks":5},
    ///  "evicted":{"addresses":0,"networks":0,"decisions":0},"probesInFlight":0,
    ///  "decisions":[{"decision":"demoted","address":"192.0.2.1","view":"carrier-a","networks":3,
    ///                "host":"www.example.test","port":443,"since":1796300000,"until":1796300600}],
    ///  "counts":{"accepted":4,…,"down":0,"demoted":1},"busiest":[{"address":"192.0.2.1","view":"carrier-a","networks":3}]}
    /// ```
    package func statusSection() -> String {
        typealias JSON = HTTPDNSServiceJSON
        let now = clock.now()
        let (aggregator, decisions, probes) = stateSnapshot(now: now)
        let counts = counters.snapshot
        let decisionList = decisions.map { decision in
            JSON.object([
                ("decision", JSON.string(decision.kind.rawValue)),
                ("address", JSON.string(decision.address.description)),
                ("view", decision.view.map(JSON.string) ?? "null"),
                ("networks", String(decision.networks)),
                ("host", JSON.string(decision.host)),
                ("port", String(decision.port)),
                ("since", String(Int64(decision.since))),
                ("until", String(Int64(decision.until))),
            ])
        }
        let busiest = aggregator.busiest(limit: Self.statusPairs, now: now).map { pair in
            JSON.object([
                ("address", JSON.string(pair.key.address.description)), ("view", JSON.string(pair.key.view)),
                ("networks", String(pair.networks)),
            ])
        }
        var countMembers = HTTPDNSReportCounters.Result.allCases.map { ($0.label, String(counts.results[$0.rawValue])) }
        countMembers += [
            ("recorded", String(counts.recorded)), ("ignored", String(counts.ignored)), ("reachable", String(counts.reachable)),
            ("unreachable", String(counts.unreachable)), ("skipped", String(counts.skipped)), ("down", String(counts.down)),
            ("demoted", String(counts.demoted)),
        ]
        return JSON.object([
            ("window", String(Int64(settings.window.inSeconds))),
            ("threshold", String(settings.threshold)),
            ("holdTime", String(Int64(settings.holdTime.inSeconds))),
            ("tracked", JSON.object([("addresses", String(aggregator.trackedKeys)), ("networks", String(aggregator.trackedNetworks))])),
            ("evicted", JSON.object([
                ("addresses", String(aggregator.evictedKeys)), ("networks", String(aggregator.evictedNetworks)),
                ("decisions", String(counts.evictedDecisions)),
            ])),
            ("probesInFlight", String(probes)),
            ("decisions", "[" + decisionList.joined(separator: ",") + "]"),
            ("counts", JSON.object(countMembers)),
            ("busiest", "[" + busiest.joined(separator: ",") + "]"),
        ])
    }
}

extension HTTPDNSService {
    /// The reports section of the status endpoint (``HTTPDNSReports/statusSection()``), for the
    /// status document to embed under `"reports"`.
    package func reportStatusSection() -> String {
        reportState.statusSection()
    }
}
