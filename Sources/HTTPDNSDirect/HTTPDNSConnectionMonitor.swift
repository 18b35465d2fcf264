import HTTPDNSCore

/// Receives what a route does with the addresses the engine gave; every method defaults to doing
/// nothing.
///
/// The engine's ``HTTPDNSEventMonitor`` speaks of resolution (lookups, cache, providers); this one
/// of connections, and the proxy's `HTTPDNSProxyMonitor` adds its tunnels. One type may conform
/// to all of them and be passed to each. Methods are called synchronously on whatever task or
/// thread does the work (the transport's thread, a proxy loop): be quick and thread-safe.
public protocol HTTPDNSConnectionMonitor: Sendable {
    /// A connection to `address` failed (refused, timed out, TLS); `error` is a `URLError` with the
    /// code apps know (`cannotConnectToHost`, `timedOut`, …) and libcurl's details under
    /// `NSDebugDescription`. Sent once per failed address; an address that another address's
    /// connection merely beat in a race is not reported, unless its attempt, left connecting, then
    /// fails (possibly after the response).
    func connectionFailed(address: HTTPDNSIPAddress, error: any Error)
    /// Failure reports (``HTTPDNSFailureReports``) were lost: `count` just now, `total` since the
    /// start. The oldest waiting report is dropped when the queue is full; a batch the endpoint
    /// refuses for good (a 4xx other than 429) is dropped whole.
    func failureReportsDropped(count: Int, total: Int)
}

extension HTTPDNSConnectionMonitor {
    public func connectionFailed(address: HTTPDNSIPAddress, error: any Error) {}
    public func failureReportsDropped(count: Int, total: Int) {}
}
