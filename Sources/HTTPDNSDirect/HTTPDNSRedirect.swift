import Foundation
@_spi(HTTPDNSPackage) import HTTPDNSCore
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What a redirect does to a request (RFC 9110 §15.4), shared by the client, the URL protocol and
/// `httpdns fetch -L`.
package enum HTTPDNSRedirect {
    /// The status codes that redirect.
    package static let statusCodes: Set<Int> = [301, 302, 303, 307, 308]

    /// The request to send after `response`, or nil when it is not a usable redirect.
    ///
    /// 301, 302 and 303 become GET without a body (HEAD stays HEAD), as browsers and curl do; 307 and 308
    /// keep method and body. The new host is resolved again by whoever sends it. Credentials
    /// (`Authorization`, `Cookie`) are not carried to another origin: a change of scheme, host or port
    /// drops them, as curl does (an https → http downgrade on the same host would otherwise send them
    /// in clear text).
    package static func nextRequest(after request: URLRequest, response: HTTPURLResponse) -> URLRequest? {
        guard statusCodes.contains(response.statusCode),
              let location = response.value(forHTTPHeaderField: "Location"),
              let base = request.url,
              let target = URL(string: location, relativeTo: base)?.absoluteURL,
              let scheme = target.scheme.map({ HTTPDNSASCII.lowercased($0.utf8) }), scheme == "http" || scheme == "https",
              target.host != nil
        else { return nil }
        var next = request
        next.url = target
        let method = request.httpMethod?.uppercased() ?? "GET"
        if [301, 302, 303].contains(response.statusCode), method != "GET", method != "HEAD" {
            next.httpMethod = "GET"
            next.httpBody = nil
            next.httpBodyStream = nil
            for name in ["Content-Type", "Content-Length", "Transfer-Encoding"] {
                next.setValue(nil, forHTTPHeaderField: name)
            }
        }
        if !sameOrigin(base, target) {
            next.setValue(nil, forHTTPHeaderField: "Authorization")
            next.setValue(nil, forHTTPHeaderField: "Cookie")
        }
        return next
    }

    /// Same scheme, host and port (default ports filled in), compared case-insensitively.
    package static func sameOrigin(_ a: URL, _ b: URL) -> Bool {
        HTTPDNSASCII.equalsIgnoringCase(a.scheme ?? "", b.scheme ?? "") && HTTPDNSASCII.equalsIgnoringCase(a.host ?? "", b.host ?? "")
            && effectivePort(a) == effectivePort(b)
    }

    /// The URL's port, or the scheme's default.
    package static func effectivePort(_ url: URL) -> Int {
        url.port ?? (HTTPDNSASCII.equalsIgnoringCase(url.scheme ?? "", "https") ? 443 : 80)
    }
}
