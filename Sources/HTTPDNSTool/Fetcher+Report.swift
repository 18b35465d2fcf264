import Foundation
import HTTPDNSCore
import HTTPDNSTransport

extension Fetcher {
    /// The response head as `-i` prints it (curl's layout, CRLF line ends).
    static func headText(_ head: HTTPTransportResponseHead) -> String {
        var text = "HTTP/\(head.httpVersion) \(head.statusCode)"
        if head.httpVersion.hasPrefix("1"), let reason = reasonPhrases[head.statusCode] { text += " \(reason)" }
        text += "\r\n"
        for header in head.headers { text += "\(header.name): \(header.value)\r\n" }
        return text + "\r\n"
    }

    static let reasonPhrases: [Int: String] = [
        200: "OK", 201: "Created", 202: "Accepted", 204: "No Content", 206: "Partial Content",
        301: "Moved Permanently", 302: "Found", 303: "See Other", 304: "Not Modified", 307: "Temporary Redirect",
        308: "Permanent Redirect", 400: "Bad Request", 401: "Unauthorized", 403: "Forbidden", 404: "Not Found",
        405: "Method Not Allowed", 413: "Content Too Large", 415: "Unsupported Media Type", 429: "Too Many Requests",
        500: "Internal Server Error", 502: "Bad Gateway", 503: "Service Unavailable", 504: "Gateway Timeout",
    ]

    /// Where a redirect points, or nil when the response is not one (or has no `Location`).
    /// - Throws: ``ToolFailure`` for a `Location` that is not an http(s) URL.
    static func redirectTarget(_ head: HTTPTransportResponseHead, from url: URL) throws(ToolFailure) -> URL? {
        guard [301, 302, 303, 307, 308].contains(head.statusCode), let location = head.header("location") else { return nil }
        guard let next = URL(string: location, relativeTo: url)?.absoluteURL,
              let scheme = next.scheme?.lowercased(), scheme == "http" || scheme == "https", next.host != nil
        else {
            throw ToolFailure("redirect to unsupported location '\(location)'")
        }
        return next
    }

    /// The request for the next hop: 301/302/303 continue with GET and no body (HEAD stays HEAD),
    /// 307/308 keep method and body. Credentials (`Authorization`, `Cookie`) are not carried to
    /// another origin, as curl does, so a redirect cannot leak them to a third party.
    static func nextHop(after hop: Hop, status: Int, to next: URL) -> Hop {
        var result = hop
        result.url = next
        if [301, 302, 303].contains(status), hop.method != "HEAD" {
            result.method = "GET"
            result.body = nil
            result.headers.removeAll { ["content-type", "content-length"].contains($0.name.lowercased()) }
        }
        let sameOrigin = hop.url.scheme?.lowercased() == next.scheme?.lowercased()
            && hop.url.host?.lowercased() == next.host?.lowercased() && effectivePort(hop.url) == effectivePort(next)
        if !sameOrigin {
            result.headers.removeAll { ["authorization", "cookie"].contains($0.name.lowercased()) }
        }
        return result
    }

    static func effectivePort(_ url: URL) -> Int {
        url.port ?? (url.scheme?.lowercased() == "https" ? 443 : 80)
    }

    // MARK: - `-v` lines (stderr)

    static func verboseAnswer(_ answer: HTTPDNSAnswer) {
        let list = answer.addresses.map(\.description).joined(separator: ", ")
        var line = "* resolved \(answer.host) via \(answer.source) (origin=\(answer.origin.rawValue), ttl=\(answer.ttl)"
        if answer.fromCache { line += ", cached" }
        if answer.isStale { line += ", stale" }
        Output.diagnostic(line + "): \(list)")
    }

    func verboseRequest(_ hop: Hop, addresses: [IPAddress]) {
        let host = hop.url.host ?? ""
        let port = Fetcher.effectivePort(hop.url)
        Output.diagnostic("* addresses to try, in order: \(addresses.map(\.description).joined(separator: ", ")) port \(port)")
        if hop.url.scheme?.lowercased() == "https" {
            Output.diagnostic("* TLS SNI and certificate name: \(host) (never the address)")
        }
        var target = hop.url.path.isEmpty ? "/" : URLComponents(url: hop.url, resolvingAgainstBaseURL: false)?.percentEncodedPath ?? "/"
        if target.isEmpty { target = "/" }
        if let query = hop.url.query { target += "?" + query }
        Output.diagnostic("> \(hop.method) \(target)")
        let defaultPort = hop.url.port == nil
        Output.diagnostic("> Host: \(host.contains(":") ? "[\(host)]" : host)\(defaultPort ? "" : ":\(port)")")
        for header in hop.headers { Output.diagnostic("> \(header.name): \(header.value)") }
        Output.diagnostic(">")
    }

    func verboseConnected(_ hop: Hop, head: HTTPTransportResponseHead) {
        let host = hop.url.host ?? ""
        let address = head.connectedAddress.map(\.description) ?? "?"
        Output.diagnostic("* connected to \(address) port \(Fetcher.effectivePort(hop.url)) for \(host)")
        if hop.url.scheme?.lowercased() == "https" {
            let trustText: String
            switch trust {
            case .system: trustText = "system CAs"
            case .caFile(let path): trustText = "CAs in \(path)"
            case .caPEM: trustText = "system CAs + --cacert"
            }
            Output.diagnostic("* SNI sent: \(host); certificate verified for \(host) (\(trustText))")
        }
        Output.diagnostic("< HTTP/\(head.httpVersion) \(head.statusCode)")
        for header in head.headers { Output.diagnostic("< \(header.name): \(header.value)") }
        Output.diagnostic("<")
    }
}
