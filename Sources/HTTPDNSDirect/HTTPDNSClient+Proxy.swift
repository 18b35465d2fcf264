import Foundation
@_spi(HTTPDNSPackage) import HTTPDNSCore

/// What ``HTTPDNSClient`` does with a protected host when the process has a proxy configured for it
/// (`http_proxy`, `https_proxy`, `all_proxy`, minus `no_proxy`, read as libcurl reads them).
///
/// A proxy is something the user or the network set up on purpose; going around it silently breaks
/// corporate networks and debugging proxies. The HTTPDNS SDKs therefore turn HTTPDNS off for proxied
/// requests (Alibaba's FAQ, Baidu's "proxy scenario").
public enum HTTPDNSProxyPolicy: Sendable, Hashable {
    /// Send the request through the proxy, which resolves the name itself: nothing is pinned and the
    /// engine is not asked. The default.
    case respect
    /// Ignore the proxy for protected hosts and connect straight to the HTTPDNS address.
    case pinDirectly
}

extension HTTPDNSConnectionReport {
    /// How a configured proxy was treated.
    public enum ProxyUse: Sendable, Hashable {
        /// No proxy is configured for the URL: a direct connection.
        case none
        /// The request went through this proxy (its URL without credentials), which resolved the host.
        case used(String)
        /// A proxy (this one) is configured for the URL, but the request connected directly to the
        /// HTTPDNS address: ``HTTPDNSProxyPolicy/pinDirectly``, or the block redirect after the proxy failed.
        case bypassed(String)
    }
}

/// The proxy settings of the environment, as libcurl 7.88 reads them (`lib/url.c`, `lib/noproxy.c`).
///
/// - `http://` URLs use `http_proxy` (lower case only: `HTTP_PROXY` can be set by a CGI request's
///   `Proxy:` header), `https://` URLs `https_proxy` then `HTTPS_PROXY`; otherwise `all_proxy` then
///   `ALL_PROXY`.
/// - `no_proxy` (then `NO_PROXY`): names and addresses separated by commas or spaces; `*` alone
///   matches every host; a name matches itself and its subdomains (a leading dot is ignored); an
///   IP address or CIDR range matches addresses in it.
package struct ProxyEnvironment: Sendable, Hashable {
    var httpProxy: String?
    var httpsProxy: String?
    var allProxy: String?
    var noProxy: [String]

    package init(_ environment: [String: String]) {
        func value(_ names: String...) -> String? {
            for name in names {
                if let value = environment[name]?.trimmingCharacters(in: .whitespaces), !value.isEmpty { return value }
            }
            return nil
        }
        httpProxy = value("http_proxy")
        httpsProxy = value("https_proxy", "HTTPS_PROXY")
        allProxy = value("all_proxy", "ALL_PROXY")
        noProxy = (value("no_proxy", "NO_PROXY") ?? "")
            .split(whereSeparator: { $0 == "," || $0 == " " || $0 == "\t" })
            .map { HTTPDNSASCII.lowercased($0.utf8) }
    }

    /// Whether any proxy is set at all (the common case is none: then nothing else is looked at).
    var isEmpty: Bool { httpProxy == nil && httpsProxy == nil && allProxy == nil }

    /// The proxy for `url`, or nil for a direct connection.
    package func proxy(for url: URL) -> String? {
        guard !isEmpty, let scheme = url.scheme.map({ HTTPDNSASCII.lowercased($0.utf8) }), let host = url.host else { return nil }
        let proxy = (scheme == "https" ? httpsProxy : httpProxy) ?? allProxy
        guard let proxy, !bypasses(host) else { return nil }
        return proxy
    }

    /// Whether `no_proxy` exempts `host`.
    package func bypasses(_ host: String) -> Bool {
        var name = HTTPDNSASCII.lowercased(host.utf8)
        if name.hasPrefix("["), name.hasSuffix("]") { name = String(name.dropFirst().dropLast()) }
        while name.hasSuffix(".") { name.removeLast() }
        let address = HTTPDNSIPAddress(name)
        for var pattern in noProxy {
            if pattern == "*" { return true }
            if let address {
                if ProxyEnvironment.matches(address, pattern) { return true }
                continue
            }
            while pattern.hasPrefix(".") { pattern.removeFirst() }
            while pattern.hasSuffix(".") { pattern.removeLast() }
            guard !pattern.isEmpty else { continue }
            if name == pattern || name.hasSuffix("." + pattern) { return true }
        }
        return false
    }

    /// `address` against an address or CIDR pattern.
    private static func matches(_ address: HTTPDNSIPAddress, _ pattern: String) -> Bool {
        var text = pattern
        if text.hasPrefix("["), let close = text.firstIndex(of: "]") { text = String(text[text.index(after: text.startIndex)..<close]) }
        let parts = text.split(separator: "/", maxSplits: 1)
        guard let first = parts.first, let network = HTTPDNSIPAddress(String(first)), network.family == address.family else { return false }
        let bits = network.bytes.count * 8
        let prefix = parts.count == 2 ? (Int(parts[1]) ?? -1) : bits
        guard prefix >= 0, prefix <= bits else { return false }
        let lhs = address.bytes, rhs = network.bytes
        for bit in 0..<prefix where (lhs[bit / 8] >> (7 - bit % 8)) & 1 != (rhs[bit / 8] >> (7 - bit % 8)) & 1 {
            return false
        }
        return true
    }

    /// `proxy` without user name and password, for reports and logs.
    package static func redacted(_ proxy: String) -> String {
        guard let at = proxy.lastIndex(of: "@") else { return proxy }
        let schemeEnd = proxy.range(of: "://")?.upperBound ?? proxy.startIndex
        guard at >= schemeEnd else { return proxy }
        return String(proxy[..<schemeEnd]) + String(proxy[proxy.index(after: at)...])
    }
}
