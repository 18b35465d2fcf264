import Foundation

/// Where a client reports the addresses it failed to connect to, closing the loop with the HTTPDNS
/// service (seed 002: the app "uploads an error log to that server and asks whether its set of
/// addresses should change"; issue 22).
///
/// Each address of a protected host that refuses, times out, fails TLS verification or its
/// handshake, is unreachable or resets the connection becomes one report: host, address, port,
/// error class and time, never a URL path, query, header or body. Reports wait in a bounded queue
/// (the oldest dropped and counted when full) and leave in batches, off the request path, as
/// `POST endpoint` with a JSON body and the credential in `Authorization`; a request goes out at
/// most once per ``interval``, and one the endpoint sheds (429 or 503, `Retry-After` honoured) or
/// that cannot be sent is tried again later. The report requests are sent straight to the endpoint
/// (resolved by the system, certificate verified with the engine's trust), never through the
/// failover, and are never reported themselves.
public struct HTTPDNSFailureReports: Sendable {
    /// How reports prove who sends them.
    public enum Credential: Sendable, Hashable {
        /// `Authorization: Bearer TOKEN`: a token the service was configured with.
        case token(String)
        /// `Authorization: HTTPDNS-HMAC-SHA256 account=ID, expires=T, signature=HEX`: HMAC-SHA256
        /// under `secret` (its UTF-8 bytes) over `"ID\nT\n"` followed by the body, `T` being ten
        /// minutes after the send in Unix seconds. The secret itself never leaves the process.
        case account(id: String, secret: String)
    }

    /// The report endpoint, an `http` or `https` URL (the service's `POST /report`).
    public var endpoint: URL
    /// The credential sent with every report request.
    public var credential: Credential
    /// Least time between two report requests. Default 60 s (at least 10 ms).
    public var interval: Duration = .seconds(60)
    /// Most reports in one request. Default 50, the most the service takes (1 to 50).
    public var maxBatch: Int = 50
    /// Most reports waiting to be sent; when full, the oldest is dropped and counted
    /// (``HTTPDNSConnectionMonitor/failureReportsDropped(count:total:)``). Default 1,000 (at least 1).
    public var queueCapacity: Int = 1_000

    /// Reports sent to `endpoint` with `credential`, with the default interval, batch and queue bound.
    public init(endpoint: URL, credential: Credential) {
        self.endpoint = endpoint
        self.credential = credential
    }
}
