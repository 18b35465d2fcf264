import Foundation
import HTTPDNS

extension HTTPDNSProxy {
    /// The names and ranges always left out of the proxy: loopback, in the spellings libcurl
    /// (CIDR since 7.86) and Python (host names and literal addresses) understand.
    static let loopbackExclusions = ["localhost", "127.0.0.1", "127.0.0.0/8", "::1"]

    /// Starts a proxy and points this process's standard proxy environment at it, so that every
    /// HTTP client in the process that honours it — `URLSession.shared` and every other session
    /// included — is protected without any change to its code.
    ///
    /// Sets `http_proxy`, `https_proxy` and `HTTPS_PROXY` to ``url`` (credential included) and
    /// `no_proxy`/`NO_PROXY` to loopback plus `excludedHosts`. This is process-wide, and has to be:
    /// swift-corelibs-foundation ignores `URLSessionConfiguration.connectionProxyDictionary` (there is
    /// no per-session proxy on Linux), but its libcurl reads these variables for every transfer and
    /// sends `CONNECT host:443` without resolving the name itself — the proxy resolves it. Call it
    /// early, before other threads read the environment (`setenv` is not safe against concurrent
    /// readers). Child processes inherit the variables.
    ///
    /// The engine's own requests to HTTPDNS services never loop through the proxy: `HTTPTransport`
    /// ignores proxy variables unless `HTTPTransport.Configuration.useEnvironmentProxy` is set.
    ///
    /// - Parameters:
    ///   - engine: resolves every target.
    ///   - configuration: the proxy's settings. Default: loopback IPv4, a random credential.
    ///   - excludedHosts: extra `no_proxy` entries (host names, `.domain` suffixes, addresses) that
    ///     connect directly. Default none.
    /// - Returns: the running proxy. Keep it for as long as the process makes requests: the
    ///   environment keeps pointing at its port, so once it is released (its loops stop with it) or
    ///   stopped, every proxied request fails against a closed port. `_ = try startForProcess(...)`
    ///   is that mistake.
    /// - Throws: ``HTTPDNSProxyError`` when it cannot start.
    public static func startForProcess(
        engine: HTTPDNSEngine, configuration: Configuration = .init(), excludedHosts: [String] = []
    ) throws(HTTPDNSProxyError) -> HTTPDNSProxy {
        let proxy = HTTPDNSProxy(engine: engine, configuration: configuration)
        try proxy.start()
        guard let url = proxy.url?.absoluteString else {
            throw HTTPDNSProxyError(.cannotListen, "the proxy has no address")
        }
        for name in ["http_proxy", "https_proxy", "HTTPS_PROXY"] { setenv(name, url, 1) }
        let excluded = (loopbackExclusions + excludedHosts).joined(separator: ",")
        for name in ["no_proxy", "NO_PROXY"] { setenv(name, excluded, 1) }
        return proxy
    }
}
