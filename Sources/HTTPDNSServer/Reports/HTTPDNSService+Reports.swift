import HTTPDNSCore

extension HTTPDNSService {
    /// Failure reports from apps (`POST /report`): who may send them, and how they become decisions.
    ///
    /// Apps that failed to reach an address report it (seed 002). Past ``threshold`` distinct client
    /// networks (/24, /56) of one view within ``window``, the server probes the address itself: a
    /// failed probe takes it out of every answer for ``holdTime``; a passing probe demotes it in the
    /// reporting view only (its answers put it last) for ``holdTime``. Credentials: a bearer token of
    /// ``tokens``, or an HMAC-SHA256 signature by an account whose secret the service already holds
    /// (``Alibaba/secrets``, ``DNSPod/accountKeys``). Without either, every report is refused.
    public struct Reports: Sendable {
        /// Bearer tokens accepted (`Authorization: Bearer <token>`), RFC 7235 token68 characters.
        /// Default none.
        public var tokens: [String] = []
        /// How long a report counts. Default 5 minutes.
        public var window: Duration = .seconds(300)
        /// Distinct client networks of one view, within ``window``, that make the server probe an
        /// address (1 to ``maxNetworksPerAddress``). Default 3.
        public var threshold: Int = 3
        /// How long a decision (down for all, demoted in a view) holds. Default 10 minutes.
        public var holdTime: Duration = .seconds(600)
        /// (address, view) pairs tracked at once; past it the least recently reported go first,
        /// counted. Default 10,000.
        public var maxTrackedAddresses: Int = 10_000
        /// Client networks remembered per (address, view); past it the oldest goes, counted.
        /// Default 32. With ``maxTrackedAddresses`` this bounds memory: about 10 MiB at the defaults.
        public var maxNetworksPerAddress: Int = 32
        /// Report requests handled at once; more are answered `503` with `Retry-After: 1` and
        /// counted (`httpdns_reports_total{result="shed"}`). Default 16.
        public var maxBatchesInFlight: Int = 16
        /// Probes in flight at once; a pair past the threshold beyond it waits for its next report.
        /// Default 16.
        public var maxProbesInFlight: Int = 16
        /// Longest a probe may take; longer counts as unreachable. Default 10 s.
        public var probeTimeout: Duration = .seconds(10)
        /// A Redis shared by the fleet (``Redis``): reports and decisions of every instance count on
        /// every instance. Default nil: this instance keeps its report state alone.
        public var redis: Redis? = nil
        /// The server's own probe of a reported address. Default nil: the service's origin prober
        /// (the zone's check for that address and port, else a TCP connect; tests put a stand-in here).
        package var probe: (any HTTPDNSReportProbe)? = nil
        /// The view of a reporting client's address. Default nil: the service's views.
        package var view: (@Sendable (HTTPDNSIPAddress) -> String)? = nil

        /// The view every client is in until views are configured.
        package static let defaultView = "default"

        public init() {}

        /// - Throws: ``HTTPDNSServiceError`` `.invalidConfiguration` naming the field.
        func validate() throws(HTTPDNSServiceError) {
            func bad(_ detail: String) -> HTTPDNSServiceError { HTTPDNSServiceError(.invalidConfiguration, "reports: \(detail)") }
            for token in tokens where token.isEmpty || token.utf8.count > 256 || !token.utf8.allSatisfy(HTTPDNSReportCredential.isToken68) {
                throw bad("a token must be 1-256 characters of A-Z a-z 0-9 - . _ ~ + / =")
            }
            guard window > .zero, holdTime > .zero, probeTimeout > .zero else { throw bad("window, hold time and probe timeout must be positive") }
            guard maxNetworksPerAddress >= 1, (1...maxNetworksPerAddress).contains(threshold) else {
                throw bad("threshold must be 1-\(max(1, maxNetworksPerAddress)) (maxNetworksPerAddress)")
            }
            guard maxTrackedAddresses >= 1, maxBatchesInFlight >= 1, maxProbesInFlight >= 1 else { throw bad("bounds must be at least 1") }
            try redis?.validate()
        }
    }
}
