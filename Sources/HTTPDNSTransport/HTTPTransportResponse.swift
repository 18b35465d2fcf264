import Foundation
import HTTPDNSCore

/// The status line and header fields of a response, available before its body.
public struct HTTPTransportResponseHead: Sendable {
    /// The HTTP status code of the final (non-1xx) response.
    public var statusCode: Int
    /// The header fields in the order received.
    public var headers: [HTTPTransportHeader]
    /// The address the connection went to (`CURLINFO_PRIMARY_IP`).
    public var connectedAddress: HTTPDNSIPAddress?
    /// The protocol version used: `"1.0"`, `"1.1"`, `"2"` or `"3"`.
    public var httpVersion: String

    public init(statusCode: Int, headers: [HTTPTransportHeader], connectedAddress: HTTPDNSIPAddress?, httpVersion: String) {
        self.statusCode = statusCode
        self.headers = headers
        self.connectedAddress = connectedAddress
        self.httpVersion = httpVersion
    }

    /// The value of the first header field named `name`, compared case-insensitively.
    public func header(_ name: String) -> String? {
        headers.httpdnsFirstValue(name)
    }
}

/// Figures about one finished transfer, for connection-reuse checks and retry decisions.
public struct HTTPTransportMetrics: Sendable, Hashable {
    /// New connections this transfer opened (`CURLINFO_NUM_CONNECTS`); 0 means a reused connection.
    public var newConnections: Int = 0
    /// Request bytes written to the network: header bytes plus body bytes.
    public var requestBytesSent: Int64 = 0
    /// Response body bytes received.
    public var responseBodyBytes: Int64 = 0
    /// Wall time of the transfer as libcurl measured it.
    public var totalTime: Duration = .zero

    public init() {}
}

/// A complete response with its body in memory.
public struct HTTPTransportResponse: Sendable {
    /// The HTTP status code.
    public var statusCode: Int
    /// The header fields in the order received.
    public var headers: [HTTPTransportHeader]
    /// The whole body.
    public var body: Data
    /// The address the connection went to (`CURLINFO_PRIMARY_IP`).
    public var connectedAddress: HTTPDNSIPAddress?
    /// The protocol version used: `"1.0"`, `"1.1"`, `"2"` or `"3"`.
    public var httpVersion: String
    /// Connection and byte counts.
    public var metrics: HTTPTransportMetrics

    public init(head: HTTPTransportResponseHead, body: Data, metrics: HTTPTransportMetrics) {
        self.statusCode = head.statusCode
        self.headers = head.headers
        self.body = body
        self.connectedAddress = head.connectedAddress
        self.httpVersion = head.httpVersion
        self.metrics = metrics
    }

    /// The value of the first header field named `name`, compared case-insensitively.
    public func header(_ name: String) -> String? {
        headers.httpdnsFirstValue(name)
    }
}
