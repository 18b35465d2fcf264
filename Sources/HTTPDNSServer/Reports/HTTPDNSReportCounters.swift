import HTTPDNSCore
import HTTPDNSFleet
import HTTPDNSOperations

/// The report series of `/metrics`, rendered after the server's own (``HTTPDNSServerMetrics/render()``).
///
/// - `httpdns_reports_total{result}`: `POST /report` requests by outcome (``Result``);
/// - `httpdns_report_items_total{result}`: items of accepted batches, `recorded` or `ignored` (an
///   address the zone does not give for that name, which the server neither counts nor probes);
/// - `httpdns_report_probes_total{result}`: the server's own probes, `reachable`, `unreachable`, or
///   `skipped` (past the probe bound; the next report tries again);
/// - `httpdns_report_decisions_total{decision}`: `down` (for all) and `demoted` (in one view);
/// - `httpdns_report_evictions_total{what}`: `address`, `network`, `decision` forgotten to stay
///   within the memory bounds;
/// - gauges `httpdns_report_tracked_addresses`, `httpdns_report_tracked_networks` and
///   `httpdns_report_decisions_in_force{decision}`;
/// - with `--redis`: `httpdns_redis_up`, `httpdns_redis_errors_total{code}`, `httpdns_redis_dropped_total`.
package final class HTTPDNSReportCounters: Sendable {
    /// What became of one `POST /report`.
    package enum Result: Int, CaseIterable, Sendable {
        case accepted, malformed, unauthorized, forbidden, tooLarge, shed, methodNotAllowed

        package var label: String {
            switch self {
            case .accepted: "accepted"
            case .malformed: "malformed"
            case .unauthorized: "unauthorized"
            case .forbidden: "forbidden"
            case .tooLarge: "too-large"
            case .shed: "shed"
            case .methodNotAllowed: "method-not-allowed"
            }
        }
    }

    struct State: Sendable {
        var results = [UInt64](repeating: 0, count: Result.allCases.count)
        var recorded: UInt64 = 0
        var ignored: UInt64 = 0
        var reachable: UInt64 = 0
        var unreachable: UInt64 = 0
        var skipped: UInt64 = 0
        var down: UInt64 = 0
        var demoted: UInt64 = 0
        var evictedAddresses = 0
        var evictedNetworks = 0
        var evictedDecisions = 0
        var trackedAddresses = 0
        var trackedNetworks = 0
        var downInForce = 0
        var demotedInForce = 0
        /// The fleet's Redis, when the reports are shared (its series are rendered then).
        var redis: HTTPDNSReportSharer?
    }

    let state = HTTPDNSLock(State())

    package init() {}

    /// Counts one request's outcome.
    package func count(_ result: Result) {
        state.withLock { $0.results[result.rawValue] &+= 1 }
    }

    /// Renders `sharer`'s series with the report families.
    func attach(_ sharer: HTTPDNSReportSharer) {
        state.withLock { $0.redis = sharer }
    }

    /// How many requests ended as `result` (for tests and the status page).
    package subscript(result: Result) -> UInt64 { state.withLock { $0.results[result.rawValue] } }

    func update(_ body: (inout State) -> Void) {
        state.withLock(body)
    }

    var snapshot: State { state.withLock { $0 } }

    /// The report families in the Prometheus text format.
    package func render() -> HTTPDNSPrometheusText {
        let state = snapshot
        var text = HTTPDNSPrometheusText(prefix: "httpdns_")
        func family(_ name: String, _ type: String, _ help: String) { text.family(name, type, help) }
        func sample(_ name: String, _ labels: String, _ value: some BinaryInteger) { text.sample(name, labels, value) }
        family("reports_total", "counter", "POST /report requests, by result.")
        for result in Result.allCases { sample("reports_total", "result=\"\(result.label)\"", state.results[result.rawValue]) }
        family("report_items_total", "counter", "Items of accepted report batches, by result.")
        sample("report_items_total", "result=\"recorded\"", state.recorded)
        sample("report_items_total", "result=\"ignored\"", state.ignored)
        family("report_probes_total", "counter", "Probes the server made of reported addresses, by result.")
        sample("report_probes_total", "result=\"reachable\"", state.reachable)
        sample("report_probes_total", "result=\"unreachable\"", state.unreachable)
        sample("report_probes_total", "result=\"skipped\"", state.skipped)
        family("report_decisions_total", "counter", "Decisions made from reports: down for all, or demoted in one view.")
        sample("report_decisions_total", "decision=\"down\"", state.down)
        sample("report_decisions_total", "decision=\"demoted\"", state.demoted)
        family("report_evictions_total", "counter", "Report state forgotten to stay within its bounds.")
        sample("report_evictions_total", "what=\"address\"", state.evictedAddresses)
        sample("report_evictions_total", "what=\"network\"", state.evictedNetworks)
        sample("report_evictions_total", "what=\"decision\"", state.evictedDecisions)
        family("report_tracked_addresses", "gauge", "(address, view) pairs with reports tracked now.")
        sample("report_tracked_addresses", "", state.trackedAddresses)
        family("report_tracked_networks", "gauge", "Client networks remembered now, over all tracked pairs.")
        sample("report_tracked_networks", "", state.trackedNetworks)
        family("report_decisions_in_force", "gauge", "Decisions holding now.")
        sample("report_decisions_in_force", "decision=\"down\"", state.downInForce)
        sample("report_decisions_in_force", "decision=\"demoted\"", state.demotedInForce)
        if let redis = state.redis {
            let errors = redis.errors
            family("redis_up", "gauge", "Whether the last exchange with the fleet's Redis worked (1) or not (0).")
            sample("redis_up", "", redis.isUp ? 1 : 0)
            family("redis_errors_total", "counter", "Failed exchanges with the fleet's Redis, by code.")
            for code in HTTPDNSRedisError.Code.allCases { sample("redis_errors_total", "code=\"\(code)\"", errors[code.description] ?? 0) }
            family("redis_dropped_total", "counter", "Reports and decisions not shared because the outbox was full while Redis was away.")
            sample("redis_dropped_total", "", redis.dropped)
        }
        return text
    }
}
