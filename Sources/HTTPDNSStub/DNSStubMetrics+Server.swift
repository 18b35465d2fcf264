import Foundation
import HTTPDNSCore
import HTTPDNSOperations
import HTTPServing

extension DNSStubMetrics {
    /// The `--metrics` listener: `GET /metrics` in the Prometheus text format, `404` for any other
    /// path, on the project's ``HTTPServer`` with small bounds (a scraper needs a connection or two:
    /// 16 connections, 10 s per request, one loop thread).
    /// - Throws: ``HTTPServer/StartError`` when the address cannot be bound.
    package func serve(address: HTTPDNSIPAddress, port: Int) throws(HTTPServer.StartError) -> HTTPServer {
        var configuration = HTTPServer.Configuration(address: address, port: port)
        configuration.threads = 1
        configuration.limits.maxConnections = 16
        configuration.limits.maxConnectionsPerClient = 8
        configuration.limits.requestTimeout = .seconds(10)
        configuration.limits.drainQuietPeriod = .milliseconds(100)
        configuration.maxRequestBodyBytes = 4_096
        return try HTTPServer(configuration: configuration) { [self] request in
            guard request.path == "/metrics" else { return .text("not found\n", status: 404) }
            guard request.method == "GET" || request.method == "HEAD" else { return .text("method not allowed\n", status: 405) }
            return HTTPServer.Response(
                headers: [HTTPServer.Header(name: "Content-Type", value: HTTPDNSPrometheusText.contentType)],
                body: Data(render().utf8))
        }
    }
}
