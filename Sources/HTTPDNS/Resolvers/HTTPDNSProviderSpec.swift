import Foundation
import HTTPDNSCore
import HTTPDNSTransport

/// A provider written as `KIND=URL`, the form the command line and config files use.
///
/// Kinds: `dnspod` (URL is the service base; the client asks `URL/d?dn=HOST&ttl=1`), `alibaba` (URL
/// includes the account path; the client asks `URL/d?host=HOST`), `doh` (RFC 8484 endpoint, GET;
/// `doh-post` for POST), `doh-json` (Google/Cloudflare JSON endpoint), `ips` (IP-list endpoint; the
/// client adds `?host=HOST`), `udp` (`IP:PORT`, plain DNS), `system` (getaddrinfo; no URL).
///
/// Credentials ride as query parameters on the URL and are taken off before requests are built:
/// `id`, `key`, `alg`, `token`, `ip` for dnspod; `secret`, `api=legacy|v2`, `aes=HEXKEY`, `ip` for alibaba. `bootstrap=IP[,IP…]` on any HTTP
/// kind gives the service's addresses so that reaching it needs no DNS.
public struct HTTPDNSProviderSpec: Sendable, Hashable, CustomStringConvertible {
    public enum Kind: String, Sendable, Hashable, CaseIterable {
        case dnspod
        case alibaba
        case doh
        case dohPost = "doh-post"
        case dohJSON = "doh-json"
        case ips
        case udp
        case system
    }

    public var kind: Kind
    /// The URL (or `IP:PORT` for udp; empty for system), credentials included.
    public var location: String

    public init(kind: Kind, location: String) {
        self.kind = kind
        self.location = location
    }

    /// Parses `KIND=URL` (or just `system`).
    /// - Throws: `.invalidConfiguration` naming what is wrong.
    public init(parsing text: String) throws {
        let parts = text.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
        guard let kind = Kind(rawValue: String(parts[0]).lowercased()) else {
            let kinds = Kind.allCases.map(\.rawValue).joined(separator: ", ")
            throw HTTPDNSError(.invalidConfiguration, "unknown provider kind in \"\(text)\" (expected one of \(kinds))")
        }
        let location = parts.count > 1 ? String(parts[1]) : ""
        if kind != .system, location.isEmpty {
            throw HTTPDNSError(.invalidConfiguration, "provider \(kind.rawValue) needs a location: \(kind.rawValue)=URL")
        }
        self.init(kind: kind, location: location)
    }

    /// The spec with secrets masked, for messages and `source` labels.
    public var description: String {
        guard var components = URLComponents(string: location), let items = components.queryItems else {
            return location.isEmpty ? kind.rawValue : "\(kind.rawValue) \(location)"
        }
        components.queryItems = items.map { item in
            ["key", "token", "secret"].contains(item.name) ? URLQueryItem(name: item.name, value: "***") : item
        }
        return "\(kind.rawValue) \(components.string ?? location)"
    }

    /// Builds the resolver this spec describes.
    ///
    /// HTTPS services are verified against the engine's ``HTTPDNSConfiguration/trust`` (the one trust
    /// setting, shared with origins).
    ///
    /// - Parameter timeout: per-request time limit for the service. Default 5 s.
    /// - Throws: ``HTTPDNSError`` `.invalidConfiguration` naming what is wrong with the spec.
    public func makeResolver(timeout: Duration = .seconds(5)) throws -> any HTTPDNSResolver {
        try makeResolver(transport: .shared, trust: nil, timeout: timeout)
    }

    /// Same, on a given transport; `trust` nil leaves it to the engine's configuration.
    package func makeResolver(
        transport: HTTPTransport,
        trust: HTTPDNSTrust? = nil,
        timeout: Duration = .seconds(5)
    ) throws -> any HTTPDNSResolver {
        switch kind {
        case .system:
            return HTTPDNSSystemResolver()
        case .udp:
            guard let (address, port) = HTTPDNSProviderSpec.parseHostPort(location) else {
                throw HTTPDNSError(.invalidConfiguration, "udp provider needs IP:PORT, got \(location)")
            }
            return HTTPDNSUDPResolver(server: address, port: port, timeout: timeout)
        default:
            break
        }
        var (base, parameters) = try HTTPDNSProviderSpec.split(location)
        var configuration = HTTPDNSProvider.Configuration()
        configuration.trust = trust
        configuration.totalTimeout = timeout
        if let list = parameters.removeValue(forKey: "bootstrap") {
            configuration.bootstrapAddresses = try list.split(separator: ",").map { text in
                guard let address = HTTPDNSIPAddress(String(text)) else {
                    throw HTTPDNSError(.invalidConfiguration, "bootstrap address \(text) is not an IP address")
                }
                return address
            }
        }
        let format: any HTTPDNSProviderFormat
        switch kind {
        case .dnspod:
            var configuration = DNSPodFormat.Configuration(baseURL: base)
            configuration.accountID = parameters.removeValue(forKey: "id")
            configuration.key = parameters.removeValue(forKey: "key")
            configuration.token = parameters.removeValue(forKey: "token")
            configuration.clientSubnet = parameters.removeValue(forKey: "ip")
            if let alg = parameters.removeValue(forKey: "alg") {
                guard let algorithm = DNSPodFormat.Algorithm(rawValue: alg.lowercased()) else {
                    throw HTTPDNSError(.invalidConfiguration, "dnspod alg must be des or aes, got \(alg)")
                }
                configuration.algorithm = algorithm
            }
            format = DNSPodFormat(configuration: configuration)
            if configuration.algorithm != nil, configuration.key == nil || configuration.accountID == nil {
                throw HTTPDNSError(.invalidConfiguration, "dnspod alg needs id and key")
            }
        case .alibaba:
            guard let slash = base.lastIndex(of: "/"), base[base.index(after: slash)...].allSatisfy(\.isNumber),
                  base.index(after: slash) < base.endIndex, !base[..<slash].hasSuffix("/")
            else {
                throw HTTPDNSError(.invalidConfiguration, "alibaba URL must end with the account ID, e.g. http://203.107.1.1/100000")
            }
            var configuration = AlibabaFormat.Configuration(
                serviceURL: String(base[..<slash]), accountID: String(base[base.index(after: slash)...]))
            configuration.secret = parameters.removeValue(forKey: "secret")
            configuration.clientSubnet = parameters.removeValue(forKey: "ip")
            if let api = parameters.removeValue(forKey: "api") {
                guard let value = AlibabaFormat.API(rawValue: api.lowercased()) else {
                    throw HTTPDNSError(.invalidConfiguration, "alibaba api must be legacy or v2, got \(api)")
                }
                configuration.api = value
            }
            if let key = parameters.removeValue(forKey: "aes") {
                do {
                    configuration.encryptionKey = try HTTPDNSCrypto.hexDecode(key)
                } catch {
                    throw HTTPDNSError(.invalidConfiguration, "alibaba aes key must be hex")
                }
            }
            format = AlibabaFormat(configuration: configuration)
        case .doh, .dohPost:
            format = DoHWireFormat(url: HTTPDNSProviderSpec.join(base, parameters), method: kind == .doh ? .get : .post)
            configuration.acceptedContentTypes = [DoHWireFormat.contentType]
            parameters = [:]
        case .dohJSON:
            format = DoHJSONFormat(configuration: .init(url: HTTPDNSProviderSpec.join(base, parameters)))
            parameters = [:]
        case .ips:
            format = IPListFormat(configuration: .init(url: HTTPDNSProviderSpec.join(base, parameters)))
            parameters = [:]
        case .udp, .system:
            preconditionFailure("handled above")
        }
        if let unknown = parameters.keys.sorted().first {
            throw HTTPDNSError(.invalidConfiguration, "unknown parameter \(unknown) for \(kind.rawValue)")
        }
        return HTTPDNSProvider(name: description, format: format, configuration: configuration, transport: transport)
    }

    /// Splits `http://h/p?a=1&b=2` into the base and its query parameters.
    static func split(_ location: String) throws -> (base: String, parameters: [String: String]) {
        guard let components = URLComponents(string: location), let scheme = components.scheme?.lowercased(),
              scheme == "http" || scheme == "https", components.host?.isEmpty == false
        else {
            throw HTTPDNSError(.invalidConfiguration, "not an http(s) URL: \(location)")
        }
        var parameters: [String: String] = [:]
        for item in components.queryItems ?? [] { parameters[item.name] = item.value ?? "" }
        var base = components
        base.query = nil
        base.fragment = nil
        return (base.string ?? location, parameters)
    }

    static func join(_ base: String, _ parameters: [String: String]) -> String {
        guard !parameters.isEmpty, var components = URLComponents(string: base) else { return base }
        components.queryItems = parameters.sorted { $0.key < $1.key }.map { URLQueryItem(name: $0.key, value: $0.value) }
        return components.string ?? base
    }

    /// Parses `IP:PORT` or `[IPv6]:PORT` (port 1-65535).
    package static func parseHostPort(_ text: String) -> (HTTPDNSIPAddress, UInt16)? {
        HTTPDNSIPAddress.parseEndpoint(Substring(text)).map { ($0.address, $0.port) }
    }
}
