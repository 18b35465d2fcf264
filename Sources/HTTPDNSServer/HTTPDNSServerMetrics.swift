import DNSWire
import HTTPDNSCore

/// The server's counters, gauges and latency histogram, rendered for `/metrics` in the Prometheus
/// text exposition format 0.0.4.
///
/// Recording a query takes one uncontended lock and a handful of array increments (no allocation,
/// no dictionary): it runs on the event-loop thread for every request. Every series is named
/// `httpdns_…`; label values are fixed words, so the number of series is bounded (HTTP statuses
/// 100–599 and the 16 DNS response codes at most).
///
/// Series (counters end in `_total`):
/// - `httpdns_queries_total{endpoint}`: every request, by `Endpoint`;
/// - `httpdns_queries_by_format_total{format}`: by answer `Format`;
/// - `httpdns_responses_total{status}`: HTTP status sent;
/// - `httpdns_dns_responses_total{rcode}`: DNS response code of the answer (`NOERROR`, `NXDOMAIN`, …);
/// - `httpdns_cache_total{outcome}`: `CacheOutcome` of each name answered;
/// - `httpdns_upstream_total{outcome}`: `UpstreamOutcome` of each name sent upstream;
/// - `httpdns_request_duration_seconds`: histogram of the time from request head to response,
///   buckets `latencyBucketsMicroseconds` (100 µs to 10 s);
/// - `httpdns_open_connections` (gauge) and `httpdns_connections_total`;
/// - `httpdns_shed_total{reason}`: requests or connections refused by a limit, by `ShedReason`;
/// - `httpdns_access_log_dropped_total`: access-log lines dropped because the writer lagged;
/// - `httpdns_zone_names` (gauge) and `httpdns_zone_loads_total{result}`: the zone in service and
///   every (re)load, `ok` or `failed` (a failed reload keeps the old zone);
/// - origin health: `httpdns_origin_up{address,check}` (gauge, 1 or 0, one per checked address and
///   check of the zone), `httpdns_health_probes_total{kind,result}` (`scheduled` or `on-demand`,
///   `passed` or `failed`) and `httpdns_health_fail_open_total` (answers that listed every address
///   of a family although all were down).
/// - `httpdns_view_queries_total{view}`: requests answered, by the view of their client
///   (``HTTPDNSViews``); one series per view in service and `default`, so at most
///   ``HTTPDNSViews/maxViews`` + 1 (a reload that drops a view drops its series).
public final class HTTPDNSServerMetrics: Sendable {
    /// The URL the request came in on.
    package enum Endpoint: Int, CaseIterable, Sendable {
        case dnspod, alibaba, ips, dohGet, dohPost, dohJSON, health, report, other
        /// DNS over TLS (RFC 7858): the DoH wire endpoint's answers on a `tls://` listener.
        case dot
        /// DNS over QUIC (RFC 9250): the DoH wire endpoint's answers on a `quic://` listener.
        case doq

        /// The label value.
        package var label: String {
            switch self {
            case .dnspod: "dnspod"
            case .alibaba: "alibaba"
            case .ips: "ips"
            case .dohGet: "doh-get"
            case .dohPost: "doh-post"
            case .dohJSON: "doh-json"
            case .health: "health"
            case .report: "report"
            case .other: "other"
            case .dot: "dot"
            case .doq: "doq"
            }
        }

        /// The endpoint a request is counted under, from its method and path (as
        /// ``HTTPDNSService/handle(_:)`` routes them); `hasDNSParameter` tells a DoH wire GET
        /// (`?dns=`) from a JSON one (`?name=`) at `/dns-query`.
        package init(method: String, path: String, hasDNSParameter: Bool) {
            switch path {
            case "/d": self = .dnspod
            case "/ips": self = .ips
            case "/health", "/ready": self = .health
            case "/report": self = .report
            case "/resolve": self = .dohJSON
            case "/dns-query":
                switch method {
                case "POST": self = .dohPost
                case "GET": self = hasDNSParameter ? .dohGet : .dohJSON
                default: self = .other
                }
            default:
                let parts = path.split(separator: "/", omittingEmptySubsequences: false)
                let isAlibaba = parts.count == 3 && parts[0].isEmpty && !parts[1].isEmpty
                    && ["d", "resolve", "sign_d", "sign_resolve"].contains(parts[2])
                self = isAlibaba ? .alibaba : .other
            }
        }
    }

    /// The shape of the answer body.
    package enum Format: Int, CaseIterable, Sendable {
        /// DNSPod's plain `ip;ip,ttl` text, the IP list, errors and `/health`.
        case text
        /// DNSPod's encrypted (DES/AES) text.
        case encrypted
        /// Alibaba's and DoH's JSON.
        case json
        /// A DNS message (RFC 8484).
        case wire

        package var label: String {
            switch self {
            case .text: "text"
            case .encrypted: "encrypted"
            case .json: "json"
            case .wire: "wire"
            }
        }
    }

    /// Where the answer for a name came from.
    package enum CacheOutcome: Int, CaseIterable, Sendable {
        /// The upstream engine's cache, fresh.
        case hit
        /// Not cached: asked upstream.
        case miss
        /// The engine's cache, past its TTL (served while refreshing, or because upstream failed).
        case stale
        /// The zone file.
        case zone

        package var label: String {
            switch self {
            case .hit: "hit"
            case .miss: "miss"
            case .stale: "stale"
            case .zone: "zone"
            }
        }
    }

    /// What happened when a name went upstream.
    package enum UpstreamOutcome: Int, CaseIterable, Sendable {
        /// An answer (addresses, NODATA or NXDOMAIN).
        case ok
        /// Every upstream failed (the query is answered `SERVFAIL` / 502).
        case failed
        /// Answered from the negative cache of a recent upstream failure, without asking again.
        case negativeCached

        package var label: String {
            switch self {
            case .ok: "ok"
            case .failed: "failed"
            case .negativeCached: "negative-cached"
            }
        }
    }

    /// Why the server refused work.
    package enum ShedReason: Int, CaseIterable, Sendable {
        /// The connection limit was reached.
        case connections
        /// One client address held its share of connections.
        case perClient
        /// The request head or body did not arrive within its deadline.
        case deadline
        /// An HTTP/2 connection asked for more concurrent streams than allowed.
        case streams
        /// A connection was closed at the end of the drain (`--drain-timeout`) with a request unfinished.
        case drain

        package var label: String {
            switch self {
            case .connections: "connections"
            case .perClient: "per-client"
            case .deadline: "deadline"
            case .streams: "streams"
            case .drain: "drain"
            }
        }
    }

    /// One answered request, as the server records it.
    package struct Query: Sendable {
        package var endpoint: Endpoint
        package var format: Format
        /// The HTTP status sent (100–599; anything else is counted as 0, "invalid").
        package var status: Int
        /// The DNS response code, when the answer carries one (DoH; the text formats map their outcome).
        package var rcode: DNSResponseCode?
        /// One outcome per name answered (a DNSPod or Alibaba batch answers several).
        package var cache: Outcomes<CacheOutcome>
        /// One outcome per name that went upstream.
        package var upstream: Outcomes<UpstreamOutcome>
        /// From the request head's arrival to the response handed to the connection.
        package var latency: Duration
        /// The view of the request's client, when a handler picked one.
        package var view: String? = nil

        package init(
            endpoint: Endpoint, format: Format, status: Int, rcode: DNSResponseCode? = nil,
            cache: Outcomes<CacheOutcome> = [], upstream: Outcomes<UpstreamOutcome> = [], latency: Duration, view: String? = nil
        ) {
            self.view = view
            self.endpoint = endpoint
            self.format = format
            self.status = status
            self.rcode = rcode
            self.cache = cache
            self.upstream = upstream
            self.latency = latency
        }
    }

    /// Counts of up to four outcomes packed in one word, 16 bits each (saturating at 65,535), so
    /// that recording a query allocates nothing.
    package struct Outcomes<Outcome: RawRepresentable & CaseIterable & Sendable>: Sendable, Hashable, ExpressibleByArrayLiteral
    where Outcome.RawValue == Int {
        private var packed: UInt64 = 0

        package init() {}

        package init(arrayLiteral outcomes: Outcome...) {
            for outcome in outcomes { add(outcome) }
        }

        /// Counts `outcome` once more.
        package mutating func add(_ outcome: Outcome) {
            let shift = UInt64(outcome.rawValue & 3) * 16
            guard (packed >> shift) & 0xffff < 0xffff else { return }
            packed &+= 1 << shift
        }

        /// How often `outcome` was counted.
        package subscript(outcome: Outcome) -> Int {
            Int((packed >> (UInt64(outcome.rawValue & 3) * 16)) & 0xffff)
        }
    }

    /// Upper bounds of the latency buckets, in microseconds: 100 µs, 250 µs, 500 µs, 1, 2.5, 5,
    /// 10, 25, 50, 100, 250, 500 ms, 1, 2.5, 5, 10 s (Prometheus' default buckets, extended below
    /// 5 ms because a cached or zone answer takes well under a millisecond).
    package static let latencyBucketsMicroseconds: [Int] = [
        100, 250, 500, 1_000, 2_500, 5_000, 10_000, 25_000, 50_000, 100_000, 250_000, 500_000,
        1_000_000, 2_500_000, 5_000_000, 10_000_000,
    ]

    struct State {
        var endpoints = [UInt64](repeating: 0, count: Endpoint.allCases.count)
        var formats = [UInt64](repeating: 0, count: Format.allCases.count)
        /// Index `status - 100` for 100...599; the last slot counts anything else.
        var statuses = [UInt64](repeating: 0, count: 501)
        var rcodes = [UInt64](repeating: 0, count: 16)
        var cache = [UInt64](repeating: 0, count: CacheOutcome.allCases.count)
        var upstream = [UInt64](repeating: 0, count: UpstreamOutcome.allCases.count)
        /// Non-cumulative counts per bucket; the last slot is `+Inf`.
        var latencyBuckets = [UInt64](repeating: 0, count: HTTPDNSServerMetrics.latencyBucketsMicroseconds.count + 1)
        var latencySumMicroseconds: UInt64 = 0
        var latencyCount: UInt64 = 0
        var openConnections = 0
        var connections: UInt64 = 0
        var shed = [UInt64](repeating: 0, count: ShedReason.allCases.count)
        var accessLogDropped: UInt64 = 0
        var zoneNames = 0
        var zoneLoads: UInt64 = 0
        var zoneLoadFailures: UInt64 = 0
        /// The views in service, in order, and each one's slot in `viewCounts`.
        var viewNames: [String] = [HTTPDNSViews.defaultName]
        var viewSlots: [String: Int] = [HTTPDNSViews.defaultName: 0]
        var viewCounts: [UInt64] = [0]
    }

    let state = HTTPDNSLock(State())
    /// Origin health (`HTTPDNSServerMetrics+Health.swift`), apart from the per-request counters.
    let health = HTTPDNSLock(HealthState())
    /// Secondary zones (`HTTPDNSServerMetrics+Transfers.swift`).
    let transfers = HTTPDNSLock(TransferState())
    /// The `POST /report` series, rendered after these.
    package let reports = HTTPDNSReportCounters()

    /// A fresh set of counters, all zero.
    public init() {}

    /// Counts one answered request.
    package func record(_ query: Query) {
        let micros = Self.microseconds(query.latency)
        let bucket = Self.bucket(forMicroseconds: micros)
        let statusSlot = (100...599).contains(query.status) ? query.status - 100 : 500
        state.withLock { state in
            state.endpoints[query.endpoint.rawValue] &+= 1
            state.formats[query.format.rawValue] &+= 1
            state.statuses[statusSlot] &+= 1
            if let rcode = query.rcode { state.rcodes[Int(rcode.rawValue & 0x0f)] &+= 1 }
            for outcome in CacheOutcome.allCases { state.cache[outcome.rawValue] &+= UInt64(query.cache[outcome]) }
            for outcome in UpstreamOutcome.allCases { state.upstream[outcome.rawValue] &+= UInt64(query.upstream[outcome]) }
            state.latencyBuckets[bucket] &+= 1
            state.latencySumMicroseconds &+= UInt64(micros)
            state.latencyCount &+= 1
            // A request answered with views since replaced is not counted under a view.
            if let view = query.view, let slot = state.viewSlots[view] { state.viewCounts[slot] &+= 1 }
        }
    }

    /// The views in service are now `names` (at start and on reload): their series are kept, those
    /// of views no longer in service dropped, so the label set stays the configured one.
    package func viewsLoaded(_ names: [String]) {
        state.withLock { state in
            var counts: [UInt64] = []
            var slots: [String: Int] = [:]
            for name in names where slots[name] == nil {
                slots[name] = counts.count
                counts.append(state.viewSlots[name].map { state.viewCounts[$0] } ?? 0)
            }
            state.viewNames = Array(slots.keys.sorted { slots[$0]! < slots[$1]! })
            state.viewSlots = slots
            state.viewCounts = counts
        }
    }

    /// A connection was accepted (raises the open-connections gauge).
    package func connectionOpened() {
        state.withLock { state in
            state.openConnections += 1
            state.connections &+= 1
        }
    }

    /// A connection closed (lowers the gauge).
    package func connectionClosed() {
        state.withLock { $0.openConnections -= 1 }
    }

    /// A request or connection was refused by a limit.
    package func shed(_ reason: ShedReason, count: Int = 1) {
        state.withLock { $0.shed[reason.rawValue] &+= UInt64(max(0, count)) }
    }

    /// Requests or connections refused for `reason` so far.
    package func shedCount(_ reason: ShedReason) -> UInt64 {
        state.withLock { $0.shed[reason.rawValue] }
    }

    /// Access-log lines were dropped because the writer lagged.
    package func accessLogDropped(_ count: Int = 1) {
        state.withLock { $0.accessLogDropped &+= UInt64(max(0, count)) }
    }

    /// A zone with `names` entries went into service (at start or on reload).
    package func zoneLoaded(names: Int) {
        state.withLock { state in
            state.zoneNames = names
            state.zoneLoads &+= 1
        }
    }

    /// A zone reload was refused (the old zone stays in service).
    package func zoneLoadFailed() {
        state.withLock { $0.zoneLoadFailures &+= 1 }
    }

    /// The open-connections gauge now.
    package var openConnections: Int { state.withLock { $0.openConnections } }

    /// Whole microseconds in `duration`, clamped to 0...Int.max.
    static func microseconds(_ duration: Duration) -> Int {
        let (seconds, attoseconds) = duration.components
        guard seconds >= 0 else { return 0 }
        guard seconds < Int64.max / 1_000_000 - 1 else { return Int.max }
        return Int(seconds) * 1_000_000 + Int(attoseconds / 1_000_000_000_000)
    }

    /// The slot of the first bucket whose bound is ≥ `micros` (the `+Inf` slot past the last).
    static func bucket(forMicroseconds micros: Int) -> Int {
        let bounds = latencyBucketsMicroseconds
        var low = 0
        var high = bounds.count
        while low < high {
            let middle = (low + high) / 2
            if bounds[middle] < micros { low = middle + 1 } else { high = middle }
        }
        return low
    }
}
