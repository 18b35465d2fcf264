import Foundation
import HTTPDNSNetworking

/// `--report URL` and its credential, shared by `fetch` and `proxy`: where the addresses that failed
/// to connect are reported (the HTTPDNS service's `POST /report`, issue 22).
enum ReportOptions {
    static let specs: [OptionSpec] = [
        OptionSpec("report", value: "url", help: """
            Report every address of a protected host that failed to connect (refused, timed out, TLS \
            verification or handshake, unreachable, reset) to this endpoint (httpdns serve's /report): \
            host, address, port, error class and time, never a path, header or body; in batches of at \
            most 50, at most one request a minute, off the request path. Needs --report-token or \
            --report-account with --report-secret.
            """),
        OptionSpec("report-token", value: "token", help: "The report endpoint's token, sent as Authorization: Bearer."),
        OptionSpec("report-account", value: "id", help: """
            The account the reports are signed for (HMAC-SHA256 over the body with --report-secret; the \
            secret itself is never sent).
            """),
        OptionSpec("report-secret", value: "secret", help: "The account's secret, with --report-account."),
    ]

    /// The report settings the flags describe; nil without `--report`.
    /// - Throws: ``UsageError`` for a bad URL, a missing, doubled or malformed credential, or a
    ///   credential without `--report`.
    static func parse(_ parsed: ParsedArguments, command: String) throws(UsageError) -> HTTPDNSFailureReports? {
        func bad(_ message: String) -> UsageError { UsageError(message, command: command) }
        let token = parsed.last("report-token")
        let account = parsed.last("report-account")
        let secret = parsed.last("report-secret")
        guard let text = parsed.last("report") else {
            guard token == nil, account == nil, secret == nil else {
                throw bad("--report-token, --report-account and --report-secret need --report URL")
            }
            return nil
        }
        let lower = text.lowercased()
        guard lower.hasPrefix("http://") || lower.hasPrefix("https://"), let url = URL(string: text), url.host?.isEmpty == false else {
            throw bad("bad --report '\(text)': expected an http(s) URL")
        }
        let credential: HTTPDNSFailureReports.Credential
        switch (token, account, secret) {
        case (let token?, nil, nil):
            guard isHeaderWord(token) else { throw bad("bad --report-token: expected printable text without spaces") }
            credential = .token(token)
        case (nil, let account?, let secret?):
            guard isHeaderWord(account), !account.contains(",") else {
                throw bad("bad --report-account '\(account)': expected printable text without spaces or commas")
            }
            guard !secret.isEmpty else { throw bad("bad --report-secret: empty") }
            credential = .account(id: account, secret: secret)
        case (nil, nil, nil):
            throw bad("--report needs --report-token, or --report-account with --report-secret")
        case (_?, _, _):
            throw bad("use either --report-token or --report-account with --report-secret, not both")
        default:
            throw bad("--report-account and --report-secret go together")
        }
        return HTTPDNSFailureReports(endpoint: url, credential: credential)
    }

    /// Visible ASCII, at least one character: safe in an `Authorization` field as it is.
    private static func isHeaderWord(_ text: String) -> Bool {
        !text.isEmpty && text.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7F }
    }
}
