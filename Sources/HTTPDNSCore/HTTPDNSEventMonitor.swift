/// Receives what the engine does; every method defaults to doing nothing.
///
/// The library prints nothing by itself: a caller that wants logs or metrics passes a monitor
/// (the shape of Alamofire's `EventMonitor`). Methods are called synchronously on whatever task or
/// thread does the work — including the HTTP transport's event-loop thread, where answers from
/// HTTPDNS services are handled — so implementations must be quick and thread-safe: a slow monitor
/// delays every transfer.
public protocol HTTPDNSEventMonitor: Sendable {
    /// A lookup for `host` started (after the cache could not answer it fresh).
    func lookupStarted(host: String, family: HTTPDNSAddressFamily)
    /// A lookup produced `answer` (from a resolver or the cache).
    func lookupAnswered(_ answer: HTTPDNSAnswer)
    /// A lookup failed with `error` (every attempt is listed in it).
    func lookupFailed(host: String, family: HTTPDNSAddressFamily, error: HTTPDNSError)
    /// A fresh cache entry answered.
    func cacheHit(host: String, family: HTTPDNSAddressFamily)
    /// An expired entry answered because a refresh failed.
    func cacheServedStale(host: String, family: HTTPDNSAddressFamily)
    /// A background refresh replaced an entry.
    func cacheRefreshed(host: String, family: HTTPDNSAddressFamily)
    /// `resolver` failed for `host`; the engine moves on to the next one.
    func resolverFailed(resolver: String, host: String, error: HTTPDNSError)
    /// Every HTTPDNS provider failed and the engine asked LocalDNS.
    func fellBackToLocalDNS(host: String)
    /// Something non-fatal went wrong (a corrupt cache file, say).
    func warning(_ message: String)
}

extension HTTPDNSEventMonitor {
    public func lookupStarted(host: String, family: HTTPDNSAddressFamily) {}
    public func lookupAnswered(_ answer: HTTPDNSAnswer) {}
    public func lookupFailed(host: String, family: HTTPDNSAddressFamily, error: HTTPDNSError) {}
    public func cacheHit(host: String, family: HTTPDNSAddressFamily) {}
    public func cacheServedStale(host: String, family: HTTPDNSAddressFamily) {}
    public func cacheRefreshed(host: String, family: HTTPDNSAddressFamily) {}
    public func resolverFailed(resolver: String, host: String, error: HTTPDNSError) {}
    public func fellBackToLocalDNS(host: String) {}
    public func warning(_ message: String) {}
}

/// The default monitor: ignores everything.
public struct HTTPDNSNoEventMonitor: HTTPDNSEventMonitor {
    public init() {}
}
