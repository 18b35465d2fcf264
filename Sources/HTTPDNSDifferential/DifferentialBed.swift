import Foundation

/// Where a differential scenario finds its servers: written by the test that starts them, read by
/// the runner (`httpdns-differential`) in a child process.
///
/// The names end in `.localhost`: libcurl (inside `URLSession` too) answers them with loopback
/// itself (RFC 6761 §6.3), so plain `URLSession` reaches the origin on an honest network without
/// `/etc/hosts` or a system resolver change. The protected routes resolve them through HTTPDNS
/// (the project's server, telling the truth), with a LocalDNS (dnsmasq) that lies.
public struct DifferentialBed: Codable, Sendable {
    /// The origin's main name and a second name on the same origin (cross-host redirects).
    public var host: String
    public var otherHost: String
    /// nginx's TLS port (HTTP/2 and HTTP/1.1) for both names.
    public var httpsPort: Int
    /// nginx's plain-HTTP port (HTTP/1.1) for both names, same locations.
    public var httpPort: Int
    /// The private CA that issued the origin's certificate (PEM file).
    public var caPath: String
    /// The HTTPDNS provider spec that knows the truth (`dnspod=http://127.0.0.1:PORT`).
    public var providerSpec: String
    /// The lying LocalDNS: address and port of the dnsmasq.
    public var localDNSAddress: String
    public var localDNSPort: Int
    /// A scratch directory the runner may write to (upload files).
    public var scratch: String

    public init(
        host: String, otherHost: String, httpsPort: Int, httpPort: Int, caPath: String, providerSpec: String,
        localDNSAddress: String, localDNSPort: Int, scratch: String
    ) {
        self.host = host
        self.otherHost = otherHost
        self.httpsPort = httpsPort
        self.httpPort = httpPort
        self.caPath = caPath
        self.providerSpec = providerSpec
        self.localDNSAddress = localDNSAddress
        self.localDNSPort = localDNSPort
        self.scratch = scratch
    }

    /// `https://HOST:PORT/PATH` on the main (or the other) name; `http://` with `plain`.
    public func url(_ path: String, other: Bool = false, plain: Bool = false) -> URL {
        let authority = "\(other ? otherHost : host):\(plain ? httpPort : httpsPort)"
        return URL(string: "\(plain ? "http" : "https")://\(authority)\(path)")!
    }
}
