import HTTPDNSCore
import HTTPDNSDirect

/// Receives what the loopback proxy does with its clients and tunnels; every method defaults to
/// doing nothing. It is also the proxy's ``HTTPDNSConnectionMonitor`` (each address that failed).
///
/// Called synchronously on the proxy's loop threads or its connect tasks: be quick and thread-safe,
/// a slow monitor delays every tunnel on its loop.
public protocol HTTPDNSProxyMonitor: HTTPDNSConnectionMonitor {
    /// The proxy connected a tunnel (or forwarded request) for `host`:`port` to `address`, at the
    /// `attempts`-th address tried.
    func proxyTunnelOpened(host: String, port: UInt16, address: HTTPDNSIPAddress, attempts: Int)
    /// The proxy found no address to connect for `host`:`port` and answered the client `status`.
    func proxyTunnelFailed(host: String, port: UInt16, status: Int, reason: String)
    /// A tunnel for `host`:`port` ended after moving the given byte counts.
    func proxyTunnelClosed(host: String, port: UInt16, bytesToServer: Int64, bytesToClient: Int64)
    /// The proxy refused a client before choosing any target (credential, malformed or stalled
    /// request head, too many connections) with `status`.
    func proxyRefused(status: Int, reason: String)
}

extension HTTPDNSProxyMonitor {
    public func proxyTunnelOpened(host: String, port: UInt16, address: HTTPDNSIPAddress, attempts: Int) {}
    public func proxyTunnelFailed(host: String, port: UInt16, status: Int, reason: String) {}
    public func proxyTunnelClosed(host: String, port: UInt16, bytesToServer: Int64, bytesToClient: Int64) {}
    public func proxyRefused(status: Int, reason: String) {}
}

/// The proxy's monitor when none is given: ignores everything.
struct ProxyNoMonitor: HTTPDNSProxyMonitor {}
