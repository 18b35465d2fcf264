import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What a redirect does to a request (RFC 9110 §15.4), shared by the client and the URL protocol.
public enum HTTPDNSRedirect {
    /// The status codes that redirect.
    public static let statusCodes: Set<Int> = [301, 302, 303, 307, 308]

    /// The request to send after `response`, or nil when it is not a usable redirect.
    ///
    /// 301, 302 and 303 become GET without a body (HEAD stays HEAD), as browsers and curl do; 307 and 308
    /// keep method and body. The new host is resolved again by whoever sends it. Credentials are not
    /// carried to another host.
    public static func nextRequest(after request: URLRequest, response: HTTPURLResponse) -> URLRequest? {
        guard statusCodes.contains(response.statusCode),
              let location = response.value(forHTTPHeaderField: "Location"),
              let base = request.url,
              let target = URL(string: location, relativeTo: base)?.absoluteURL,
              let scheme = target.scheme?.lowercased(), scheme == "http" || scheme == "https", target.host != nil
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
        if target.host?.lowercased() != base.host?.lowercased() {
            next.setValue(nil, forHTTPHeaderField: "Authorization")
            next.setValue(nil, forHTTPHeaderField: "Cookie")
        }
        return next
    }
}
