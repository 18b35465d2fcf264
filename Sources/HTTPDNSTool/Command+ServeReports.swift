import Foundation
import HTTPDNSServer

extension Command {
    /// `httpdns serve`'s options for failure reports (`POST /report`).
    static let serveReportSpecs: [OptionSpec] = [
        OptionSpec("report-token", value: "token", help: """
            A bearer token apps may send failure reports with (repeatable): POST /report with \
            Authorization: Bearer TOKEN. Accounts of --alibaba-secret and --dnspod-key may sign reports \
            instead (HTTPDNS-HMAC-SHA256). Prefer the config file's serve.reportTokens: ps shows command \
            lines. Default none.
            """),
        OptionSpec("report-window", value: "seconds", help: "How long a failure report counts. Default \(helpSeconds(serveDefaults.reports.window))."),
        OptionSpec("report-threshold", value: "n", help: """
            Distinct client networks (/24, /56) of one view reporting an address within the window that \
            make the server probe it: a failed probe takes it out of every answer, a passing one puts it \
            last in that view's answers (1-\(serveDefaults.reports.maxNetworksPerAddress)). Default \(serveDefaults.reports.threshold).
            """),
        OptionSpec("report-hold", value: "seconds", help: "How long a decision from reports holds. Default \(helpSeconds(serveDefaults.reports.holdTime))."),
        OptionSpec("report-max-addresses", value: "n", help: """
            (address, view) pairs of failure reports tracked at once (1-1000000), the bound on their memory \
            (about 1 KiB each); one client network (/24, /56) creates at most 32 of them, and past the bound \
            the pairs of networks or credentials holding more than their share go first, so a flood evicts \
            its own. Default \(serveDefaults.reports.maxTrackedAddresses).
            """),
        OptionSpec("redis", value: "url", help: """
            Share report state with the other instances of a fleet through one Redis: \
            redis://[user:password@]host:port[/db] or unix:/path/to/socket. A report that reaches any \
            instance counts for all, and a decision reaches every instance within a second; while Redis \
            is unreachable each instance decides alone (httpdns_redis_up, httpdns_redis_errors_total). \
            Prefer the config file's serve.redis for a URL with a password: ps shows command lines. \
            Default none (this instance alone).
            """),
        OptionSpec("redis-namespace", value: "name", help: "Prefix of every Redis key, so fleets can share one Redis. Default \(HTTPDNSService.Reports.Redis().namespace)."),
    ]

    /// The report settings from their options (the config file's `serve` object merged in).
    static func readReportOptions(
        _ parsed: ParsedArguments, into reports: inout HTTPDNSService.Reports, bad: (String) -> UsageError
    ) throws {
        func seconds(_ name: String) throws -> Duration? {
            guard let text = parsed.last(name) else { return nil }
            guard let value = Double(text), value >= 1, value <= 86_400 else { throw bad("bad --\(name) '\(text)': 1-86400 seconds") }
            return .milliseconds(Int64(value * 1000))
        }
        reports.tokens = parsed.all("report-token")
        for token in reports.tokens where token.isEmpty || token.utf8.count > 256 || !token.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "-._~+/=".contains($0)) }) {
            throw bad("bad --report-token: 1-256 characters of A-Z a-z 0-9 - . _ ~ + / =")
        }
        if let value = try seconds("report-window") { reports.window = value }
        if let value = try seconds("report-hold") { reports.holdTime = value }
        if let text = parsed.last("report-threshold") {
            guard let value = Int(text), (1...reports.maxNetworksPerAddress).contains(value) else {
                throw bad("bad --report-threshold '\(text)': 1-\(reports.maxNetworksPerAddress)")
            }
            reports.threshold = value
        }
        if let text = parsed.last("report-max-addresses") {
            guard let value = Int(text), (1...1_000_000).contains(value) else { throw bad("bad --report-max-addresses '\(text)': 1-1000000") }
            reports.maxTrackedAddresses = value
        }
        if let url = parsed.last("redis") {
            do {
                var redis = try HTTPDNSService.Reports.Redis(url: url)
                if let namespace = parsed.last("redis-namespace") { redis.namespace = namespace }
                reports.redis = redis
            } catch {
                throw bad("bad --\(error.detail)")
            }
        } else if parsed.has("redis-namespace") {
            throw bad("--redis-namespace needs --redis")
        }
    }
}
