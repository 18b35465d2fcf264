import Foundation
import HTTPDNSCore

/// The status line and header fields of a response, available before its body.
package struct HTTPTransportResponseHead: Sendable {
    /// The HTTP status code of the final (non-1xx) response.
    package var statusCode: Int
    /// The header fields in the order received.
    package var headers: [HTTPTransportHeader]
    /// The address the connection went to (`CURLINFO_PRIMARY_IP`).
    package var connectedAddress: HTTPDNSIPAddress?
    /// The protocol version used: `"1.0"`, `"1.1"`, `"2"` or `"3"`.
    package var httpVersion: String
    /// libcurl's phase times up to the response head.
    package var timings = HTTPTransportTimings()

    package init(statusCode: Int, headers: [HTTPTransportHeader], connectedAddress: HTTPDNSIPAddress?, httpVersion: String) {
        self.statusCode = statusCode
        self.headers = headers
        self.connectedAddress = connectedAddress
        self.httpVersion = httpVersion
    }

    /// The value of the first header field named `name`, compared case-insensitively.
    package func header(_ name: String) -> String? {
        headers.httpdnsFirstValue(name)
    }
}

/// Figures about one finished transfer, for connection-reuse checks and retry decisions.
package struct HTTPTransportMetrics: Sendable, Hashable {
    /// New connections this transfer opened (`CURLINFO_NUM_CONNECTS`); 0 means a reused connection.
    package var newConnections: Int = 0
    /// Request bytes written to the network: header bytes plus body bytes.
    package var requestBytesSent: Int64 = 0
    /// Response body bytes received.
    package var responseBodyBytes: Int64 = 0
    /// Wall time of the transfer as libcurl measured it.
    package var totalTime: Duration = .zero
    /// libcurl's phase times for the whole transfer.
    package var timings = HTTPTransportTimings()

    package init() {}
}

/// A complete response with its body in memory.
package struct HTTPTransportResponse: Sendable {
    /// The HTTP status code.
    package var statusCode: Int
    /// The header fields in the order received.
    package var headers: [HTTPTransportHeader]
    /// The whole body.
    package var body: Data
    /// The address the connection went to (`CURLINFO_PRIMARY_IP`).
    package var connectedAddress: HTTPDNSIPAddress?
    /// The protocol version used: `"1.0"`, `"1.1"`, `"2"` or `"3"`.
    package var httpVersion: String
    /// Connection and byte counts.
    package var metrics: HTTPTransportMetrics

    package init(head: HTTPTransportResponseHead, body: Data, metrics: HTTPTransportMetrics) {
        self.statusCode = head.statusCode
        self.headers = head.headers
        self.body = body
        self.connectedAddress = head.connectedAddress
        self.httpVersion = head.httpVersion
        self.metrics = metrics
    }

    /// The value of the first header field named `name`, compared case-insensitively.
    package func header(_ name: String) -> String? {
        headers.httpdnsFirstValue(name)
    }
}
