import Foundation
import HTTPDNSCore
import HTTPDNSNetworking
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension Fetcher {
    /// The response head as `-i` prints it (curl's layout, CRLF line ends), from the fields as
    /// received: order and repeats kept.
    static func headText(status: Int, report: HTTPDNSConnectionReport) -> String {
        var text = "HTTP/\(report.httpVersion) \(status)"
        if report.httpVersion.hasPrefix("1"), let reason = reasonPhrases[status] { text += " \(reason)" }
        text += "\r\n"
        for header in report.responseHeaders { text += "\(header.name): \(header.value)\r\n" }
        return text + "\r\n"
    }

    static let reasonPhrases: [Int: String] = [
        200: "OK", 201: "Created", 202: "Accepted", 204: "No Content", 206: "Partial Content",
        301: "Moved Permanently", 302: "Found", 303: "See Other", 304: "Not Modified", 307: "Temporary Redirect",
        308: "Permanent Redirect", 400: "Bad Request", 401: "Unauthorized", 403: "Forbidden", 404: "Not Found",
        405: "Method Not Allowed", 413: "Content Too Large", 415: "Unsupported Media Type", 429: "Too Many Requests",
        500: "Internal Server Error", 502: "Bad Gateway", 503: "Service Unavailable", 504: "Gateway Timeout",
    ]

    // MARK: - `-v` lines (stderr)

    /// How one exchange went, from the client's connection report: the answer used, each address
    /// that failed, the address connected to, the request sent, SNI and verification, the head.
    static func verboseExchange(_ request: URLRequest, report: HTTPDNSConnectionReport, status: Int, trustText: String) {
        guard let url = request.url else { return }
        let port = effectivePort(url)
        if let answer = report.answer {
            verboseAnswer(answer)
        } else if HTTPDNSIPAddress(report.host) == nil {
            Output.diagnostic("* \(report.host) is not under --protect: the system resolver chose the address")
        }
        for attempt in report.attempts {
            guard let failure = attempt.failure else { continue }
            let address = attempt.address.map(\.description) ?? report.host
            Output.diagnostic("* \(address) port \(port) failed: \(failure)")
        }
        if report.viaBlockRedirect { Output.diagnostic("* the address came from the block redirect") }
        let address = report.connectedAddress.map(\.description) ?? "?"
        Output.diagnostic("* connected to \(address) port \(port) for \(report.host)")
        verboseRequest(request, url: url)
        if url.scheme?.lowercased() == "https", report.certificateVerified {
            Output.diagnostic("* SNI sent: \(report.host); certificate verified for \(report.host) (\(trustText))")
        }
        Output.diagnostic("< HTTP/\(report.httpVersion) \(status)")
        for header in report.responseHeaders { Output.diagnostic("< \(header.name): \(header.value)") }
        Output.diagnostic("<")
    }

    static func verboseAnswer(_ answer: HTTPDNSAnswer) {
        let list = answer.addresses.map(\.description).joined(separator: ", ")
        var line = "* resolved \(answer.host) via \(answer.source) (origin=\(answer.origin.rawValue), ttl=\(answer.ttl)"
        if answer.fromCache { line += ", cached" }
        if answer.isStale { line += ", stale" }
        Output.diagnostic(line + "): \(list)")
    }

    /// The request line and headers as the client sends them.
    static func verboseRequest(_ request: URLRequest, url: URL) {
        let host = url.host ?? ""
        var target = URLComponents(url: url, resolvingAgainstBaseURL: false)?.percentEncodedPath ?? "/"
        if target.isEmpty { target = "/" }
        if let query = url.query { target += "?" + query }
        Output.diagnostic("> \(request.httpMethod ?? "GET") \(target)")
        let hostText = host.contains(":") && !host.hasPrefix("[") ? "[\(host)]" : host
        Output.diagnostic("> Host: \(hostText)\(url.port.map { ":\($0)" } ?? "")")
        let fields = (request.allHTTPHeaderFields ?? [:]).sorted { $0.key < $1.key }
        for (name, value) in fields { Output.diagnostic("> \(name): \(value)") }
        Output.diagnostic(">")
    }
}
