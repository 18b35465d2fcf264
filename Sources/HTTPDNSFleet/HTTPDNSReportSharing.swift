import HTTPDNSCore

/// What an instance writes to and reads from the fleet's Redis, and when: a plain value with an
/// explicit `now`, held by ``HTTPDNSReportSharer`` behind its lock and tested without sockets.
///
/// Key layout (every key under the namespace, every key expiring):
/// - `NS:reports:VIEW:ADDRESS`: sorted set of the reporting networks (``HTTPDNSReportNetwork/packed``
///   in hex), scored by the time of their latest report; trimmed to the window at each write, and
///   expiring one window after the last;
/// - `NS:decision:down:ADDRESS` and `NS:decision:demoted:VIEW:ADDRESS`: one decision, expiring
///   when its hold ends (for people and tools reading Redis);
/// - `NS:decisions`: sorted set of every decision in force (the encoded decision, scored by the end
///   of its hold); trimmed at each write, expiring one hold after the last;
/// - `NS:decisions:version`: a counter raised at each decision written, expiring with the index;
///   the one key the instances poll, reading the index only when it moved.
///
/// Polling, not SUBSCRIBE: a poll reads the state itself, so an instance that was away (or just
/// started, or whose Redis restarted empty) catches up by its next poll, where a missed message
/// would be lost for good; and one connection on one thread serves writes and reads alike. Every
/// 250 ms is one `GET` per instance, well within the second a decision may take to reach the fleet.
package struct HTTPDNSReportSharing: Sendable {
    /// One accepted report item, as shared.
    package struct Report: Sendable, Hashable {
        package var key: HTTPDNSReportKey
        package var network: HTTPDNSReportNetwork
        package var host: String
        package var port: Int
        package var time: Double

        package init(key: HTTPDNSReportKey, network: HTTPDNSReportNetwork, host: String, port: Int, time: Double) {
            self.key = key
            self.network = network
            self.host = host
            self.port = port
            self.time = time
        }
    }

    /// A network's latest report of a pair, as read back from Redis.
    package struct Sighting: Sendable, Hashable {
        package var network: UInt64
        package var time: Double

        package init(network: UInt64, time: Double) {
            self.network = network
            self.time = time
        }
    }

    package let namespace: String
    /// Seconds a report counts (the service's `Reports.window`).
    package let window: Double
    /// Seconds a decision holds (`Reports.holdTime`).
    package let hold: Double
    /// Networks read back per pair (`Reports.maxNetworksPerAddress`).
    package let maxNetworks: Int
    /// Reports and decisions kept to send at once; past it the oldest go, counted.
    package let maxPending: Int

    private(set) var reports: [Report] = []
    private(set) var decisions: [HTTPDNSReportDecision] = []
    /// Reports and decisions dropped to stay within ``maxPending``, in all.
    package private(set) var dropped = 0
    /// Failures in a row; 0 while Redis answers.
    package private(set) var failures = 0
    /// When (monotonic seconds) a new connection may be tried.
    package private(set) var retryAt: Double = 0
    /// Whether the last exchange worked.
    package private(set) var up = false
    /// The version of the decisions last read; nil: read them at the next poll.
    package private(set) var seenVersion: HTTPDNSRedisReply?

    package init(namespace: String, window: Double, hold: Double, maxNetworks: Int, maxPending: Int) {
        self.namespace = namespace
        self.window = window
        self.hold = hold
        self.maxNetworks = max(1, maxNetworks)
        self.maxPending = max(1, maxPending)
    }

    // MARK: The outbox

    /// Keeps `report` to send; the oldest goes when full.
    package mutating func enqueue(_ report: Report) {
        if reports.count >= maxPending {
            reports.removeFirst()
            dropped += 1
        }
        reports.append(report)
    }

    /// Keeps `decision` to publish; the oldest goes when full.
    package mutating func enqueue(_ decision: HTTPDNSReportDecision) {
        if decisions.count >= maxPending {
            decisions.removeFirst()
            dropped += 1
        }
        decisions.append(decision)
    }

    /// Takes up to `limit` reports and every pending decision to send now.
    package mutating func take(limit: Int) -> (reports: [Report], decisions: [HTTPDNSReportDecision]) {
        let taken = Array(reports.prefix(limit))
        reports.removeFirst(taken.count)
        let decided = decisions
        decisions = []
        return (taken, decided)
    }

    /// Puts back what ``take(limit:)`` gave when sending it failed, ahead of what came since (still bounded).
    package mutating func putBack(reports: [Report], decisions: [HTTPDNSReportDecision]) {
        let newerReports = self.reports
        let newerDecisions = self.decisions
        self.reports = []
        self.decisions = []
        for report in reports + newerReports { enqueue(report) }
        for decision in decisions + newerDecisions { enqueue(decision) }
    }

    /// Whether anything waits to be sent.
    package var hasPending: Bool { !reports.isEmpty || !decisions.isEmpty }

    // MARK: Health and backoff

    /// Whether a connection may be tried at monotonic `now`.
    package func mayConnect(now: Double) -> Bool { now >= retryAt }

    /// An exchange failed at monotonic `now`: wait 100 ms, doubling per failure in a row up to 2 s.
    package mutating func failed(now: Double) {
        failures += 1
        up = false
        seenVersion = nil
        retryAt = now + min(2, 0.1 * Double(1 << min(failures - 1, 5)))
    }

    /// An exchange worked. Returns whether Redis was down before (the caller then re-publishes its
    /// decisions in force: Redis may have lost them, or never had them).
    package mutating func succeeded() -> Bool {
        let wasDown = !up
        failures = 0
        up = true
        return wasDown
    }

    // MARK: Commands

    /// `NS:reports:VIEW:ADDRESS`.
    package func reportsKey(_ key: HTTPDNSReportKey) -> String { "\(namespace):reports:\(key.view):\(key.address)" }
    /// `NS:decisions`.
    package var indexKey: String { "\(namespace):decisions" }
    /// `NS:decisions:version`.
    package var versionKey: String { "\(namespace):decisions:version" }
    /// `NS:decision:down:ADDRESS` or `NS:decision:demoted:VIEW:ADDRESS`.
    package func decisionKey(_ decision: HTTPDNSReportDecision) -> String {
        switch decision.kind {
        case .down: "\(namespace):decision:down:\(decision.address)"
        case .demoted: "\(namespace):decision:demoted:\(decision.view ?? ""):\(decision.address)"
        }
    }

    /// The four commands that share `report`; the fourth's reply is the pair's sightings in the
    /// window, fleet-wide (``sightings(_:)``).
    package func commands(for report: Report) -> [[String]] {
        let key = reportsKey(report.key)
        let horizon = report.time - window
        return [
            ["ZADD", key, Self.number(report.time), String(report.network.packed, radix: 16)],
            ["ZREMRANGEBYSCORE", key, "-inf", "(" + Self.number(horizon)],
            ["PEXPIRE", key, Self.milliseconds(window)],
            ["ZREVRANGEBYSCORE", key, "+inf", Self.number(horizon), "WITHSCORES", "LIMIT", "0", String(maxNetworks)],
        ]
    }

    /// The commands that publish `decision` at `now`; none once its hold has ended.
    package func commands(for decision: HTTPDNSReportDecision, now: Double) -> [[String]] {
        guard decision.until > now else { return [] }
        let member = Self.encode(decision)
        return [
            ["SET", decisionKey(decision), member, "PX", Self.milliseconds(decision.until - now)],
            ["ZADD", indexKey, Self.number(decision.until), member],
            ["ZREMRANGEBYSCORE", indexKey, "-inf", Self.number(now)],
            ["PEXPIRE", indexKey, Self.milliseconds(hold)],
            ["INCR", versionKey],
            ["PEXPIRE", versionKey, Self.milliseconds(hold)],
        ]
    }

    /// The command of each poll: the decisions' version (``versionChanged(_:)`` reads its reply).
    package var pollCommand: [String] { ["GET", versionKey] }

    /// Whether the version a poll read differs from the one last seen (then the decisions are read
    /// with ``readCommand(now:)``); remembers it.
    package mutating func versionChanged(_ version: HTTPDNSRedisReply) -> Bool {
        defer { seenVersion = version }
        return version != seenVersion
    }

    /// The command that reads the decisions in force at `now` (``decisions(_:)`` reads its reply).
    package func readCommand(now: Double) -> [String] {
        ["ZRANGEBYSCORE", indexKey, "(" + Self.number(now), "+inf"]
    }

    /// The sightings in a `ZREVRANGEBYSCORE … WITHSCORES` reply; nil when it is not one.
    package static func sightings(_ reply: HTTPDNSRedisReply) -> [Sighting]? {
        guard case .array(let items) = reply, items.count.isMultiple(of: 2) else { return nil }
        var sightings: [Sighting] = []
        for index in stride(from: 0, to: items.count, by: 2) {
            guard case .string(let member) = items[index], case .string(let score) = items[index + 1],
                  let network = UInt64(member, radix: 16), let time = Double(score) else { return nil }
            sightings.append(Sighting(network: network, time: time))
        }
        return sightings
    }

    /// The decisions in a poll's reply; nil when it is not one (members that do not read are skipped).
    package static func decisions(_ reply: HTTPDNSRedisReply) -> [HTTPDNSReportDecision]? {
        guard case .array(let items) = reply else { return nil }
        return items.compactMap { item in
            guard case .string(let member) = item else { return nil }
            return decode(member)
        }
    }

    /// `KIND ADDRESS VIEW NETWORKS PORT SINCE UNTIL HOST`, space-separated (`-` for no view).
    package static func encode(_ decision: HTTPDNSReportDecision) -> String {
        [decision.kind.rawValue, decision.address.description, decision.view ?? "-", String(decision.networks), String(decision.port),
         number(decision.since), number(decision.until), decision.host].joined(separator: " ")
    }

    /// The decision ``encode(_:)`` wrote; nil for anything else.
    package static func decode(_ member: String) -> HTTPDNSReportDecision? {
        let fields = member.split(separator: " ", omittingEmptySubsequences: false).map(String.init)
        guard fields.count == 8, let kind = HTTPDNSReportDecision.Kind(rawValue: fields[0]), let address = HTTPDNSIPAddress(fields[1]),
              let networks = Int(fields[3]), let port = Int(fields[4]), let since = Double(fields[5]), let until = Double(fields[6]),
              (kind == .down) == (fields[2] == "-"), !fields[7].isEmpty else { return nil }
        return HTTPDNSReportDecision(
            kind: kind, address: address, view: kind == .down ? nil : fields[2], networks: networks, host: fields[7], port: port,
            since: since, until: until)
    }

    /// Whether `view` can be shared: keys and members are split on `:` and spaces.
    package static func isShareable(view: String) -> Bool {
        !view.isEmpty && view != "-" && !view.contains(where: { $0 == " " || $0 == "\n" || $0 == "\r" })
    }

    static func number(_ value: Double) -> String {
        // Milliseconds are enough, and keep scores exact across instances.
        let milliseconds = Int64((value * 1000).rounded())
        let magnitude = milliseconds.magnitude
        let fraction = String(magnitude % 1000)
        return (milliseconds < 0 ? "-" : "") + "\(magnitude / 1000)." + String(repeating: "0", count: 3 - fraction.count) + fraction
    }

    static func milliseconds(_ seconds: Double) -> String {
        String(max(1, Int((seconds * 1000).rounded(.up))))
    }
}
