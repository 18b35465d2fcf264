import Foundation
import HTTPServing

extension HTTPDNSService {
    /// `text/plain` with a status; reasons are short and never echo request bytes unbounded.
    static func text(_ body: String, status: Int = 200) -> HTTPServer.Response {
        HTTPServer.Response(
            status: status, headers: [HTTPServer.Header(name: "Content-Type", value: "text/plain; charset=utf-8")],
            body: Data(body.utf8))
    }

    /// A JSON body with `content-type`.
    static func json(_ body: String, status: Int = 200, contentType: String = "application/json") -> HTTPServer.Response {
        HTTPServer.Response(
            status: status, headers: [HTTPServer.Header(name: "Content-Type", value: contentType)], body: Data(body.utf8))
    }

    /// `400 Bad Request` with a one-line reason.
    static func badRequest(_ reason: String) -> HTTPServer.Response {
        text(reason + "\n", status: 400)
    }

    /// The first query parameter called `name`, percent-decoded but with `+` kept (base64 uses it);
    /// nil when absent.
    static func rawQueryValue(_ request: HTTPServer.Request, _ name: String) -> [UInt8]? {
        request.query.rawValue(name)
    }

    /// True when `request` carries the parameter `name` more than once (a smuggling attempt: two
    /// readers of one URL must not see different names).
    static func isRepeated(_ request: HTTPServer.Request, _ name: String) -> Bool {
        request.query.count(name) > 1
    }
}
