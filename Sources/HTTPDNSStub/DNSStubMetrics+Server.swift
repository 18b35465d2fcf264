import Foundation
import HTTPDNSCore
import HTTPDNSOperations
import HTTPServing

extension DNSStubMetrics {
    /// The `--metrics` listener: `GET /metrics` in the Prometheus text format, `GET /status` the
    /// stub's status document (JSON, or the console's HTML page for a browser), `404` for any other
    /// path, on the project's ``HTTPServer`` with small bounds (a scraper needs a connection or two:
    /// 16 connections, 10 s per request, one loop thread).
    ///
    /// No token guards `/status`, as none guards `/metrics`: it shows upstreams and counts, no
    /// names asked; the listener belongs on loopback (or behind the operator's own access control).
    /// - Parameter status: the status document now (``DNSStubResolver/statusDocument()``).
    /// - Throws: ``HTTPServer/StartError`` when the address cannot be bound.
    package func serve(
        address: HTTPDNSIPAddress, port: Int, status: @escaping @Sendable () -> HTTPDNSStatusValue
    ) throws(HTTPServer.StartError) -> HTTPServer {
        var configuration = HTTPServer.Configuration(address: address, port: port)
        configuration.threads = 1
        configuration.limits.maxConnections = 16
        configuration.limits.maxConnectionsPerClient = 8
        configuration.limits.requestTimeout = .seconds(10)
        configuration.limits.drainQuietPeriod = .milliseconds(100)
        configuration.maxRequestBodyBytes = 4_096
        return try HTTPServer(configuration: configuration) { [self] request in
            guard request.path == "/metrics" || request.path == "/status" else { return .text("not found\n", status: 404) }
            guard request.method == "GET" || request.method == "HEAD" else { return .text("method not allowed\n", status: 405) }
            guard request.path == "/status" else {
                return HTTPServer.Response(
                    headers: [HTTPServer.Header(name: "Content-Type", value: HTTPDNSPrometheusText.contentType)],
                    body: Data(render().utf8))
            }
            return Self.statusResponse(status(), accept: request.header("Accept"))
        }
    }

    /// `document` as the page for a browser's `Accept`, else as JSON; never cached.
    static func statusResponse(_ document: HTTPDNSStatusValue, accept: String?) -> HTTPServer.Response {
        let html = HTTPDNSStatusPage.prefersHTML(accept: accept)
        var headers = [
            HTTPServer.Header(name: "Content-Type", value: html ? HTTPDNSStatusPage.contentType : "application/json"),
            HTTPServer.Header(name: "Vary", value: "Accept"),
        ]
        if html {
            headers += HTTPDNSStatusPage.headers.map { HTTPServer.Header(name: $0.name, value: $0.value) }
        } else {
            headers.append(HTTPServer.Header(name: "Cache-Control", value: "no-store"))
        }
        let body = html ? HTTPDNSStatusPage.render(title: "httpdns stub", document: document) : document.json + "\n"
        return HTTPServer.Response(headers: headers, body: Data(body.utf8))
    }
}
