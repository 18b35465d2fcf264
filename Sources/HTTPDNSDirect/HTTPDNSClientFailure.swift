import Foundation
import HTTPDNSCore
import HTTPDNSTransport

/// A failed exchange with what was learnt on the way; turned into a `URLError` for callers, which
/// keep the details in its `userInfo` (``URLError/httpdnsConnectionReport``).
struct HTTPDNSClientFailure: Error {
    static let reportKey = "HTTPDNSConnectionReport"
    static let underlyingKey = "HTTPDNSUnderlyingError"

    var underlying: any Error
    var report: HTTPDNSConnectionReport
}

extension URLError {
    /// For errors from ``HTTPDNSClient`` and `HTTPDNSURLProtocol`: the answer the addresses came
    /// from and every address tried with why it failed.
    public var httpdnsConnectionReport: HTTPDNSConnectionReport? {
        userInfo[HTTPDNSClientFailure.reportKey] as? HTTPDNSConnectionReport
    }

    /// For errors from ``HTTPDNSClient``: the error underneath, an ``HTTPDNSError`` (resolution) or an
    /// `HTTPTransportError` (connection, TLS, HTTP), to tell them apart without parsing text.
    public var httpdnsUnderlyingError: (any Error)? {
        userInfo[HTTPDNSClientFailure.underlyingKey] as? any Error
    }
}
