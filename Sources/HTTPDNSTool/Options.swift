import Foundation
import HTTPDNS
import HTTPDNSCore
import HTTPDNSTransport

/// The options `resolve`, `fetch` and `check` share, merged from `--config FILE` and the flags
/// (flags win), validated once so that every bad value is a usage error before any traffic.
struct SharedOptions: Sendable {
    /// The LocalDNS choice, as written.
    enum LocalDNSChoice: Sendable, Equatable {
        case system
        case server(HTTPDNSIPAddress, port: UInt16)
    }

    /// Used when neither flags nor the config file name a provider (issue 23): free public DNS over
    /// HTTPS services, tried in order, each verified by its certificate and reached through its
    /// bootstrap addresses (never the local resolver): DNSPod's public DoH and AliDNS, both reachable
    /// from mainland China, then Cloudflare's outside it. Tencent's HTTPDNS (`dnspod=`) needs an
    /// account since its free `119.29.29.29` service ended on 2022-01-01.
    static let defaultProviders = [
        "doh=https://doh.pub/dns-query?bootstrap=1.12.12.12,120.53.53.53",
        "doh=https://dns.alidns.com/dns-query?bootstrap=223.5.5.5,223.6.6.6",
        "doh=https://cloudflare-dns.com/dns-query?bootstrap=1.1.1.1,1.0.0.1",
    ]

    static let specs: [OptionSpec] = [
        OptionSpec("provider", value: "kind=url", help: """
            An HTTPDNS service to ask, tried in the order given (repeatable). Kinds: dnspod, alibaba, doh, \
            doh-post, doh-json, ips, udp (IP:PORT), system. Credentials ride as URL query parameters \
            (dnspod: id, key, alg, token; alibaba: secret); bootstrap=IP gives the service's address. \
            Default, in order: \(defaultProviders.joined(separator: ", ")).
            """),
        OptionSpec("config", value: "file", help: """
            A JSON file with any of: providers, localDNS, httpdnsOnly, allowPrivate, type, cacert, timeout, \
            protect, resolve, fallbackIPs, serve. Flags override it; unknown keys are errors.
            """),
        OptionSpec("local-dns", value: "system|udp=ip:port", help: """
            The LocalDNS fallback (and the side `check` compares against). Default: system.
            """),
        OptionSpec("httpdns-only", help: "Never fall back to LocalDNS; fail instead."),
        OptionSpec("allow-private", help: """
            Accept loopback and private addresses from HTTPDNS (test beds, intranets). By default they are \
            dropped as signs of hijacking.
            """),
        OptionSpec("type", value: "A|AAAA|BOTH", help: "Address family to resolve. Default: A."),
        OptionSpec("cacert", value: "file", help: """
            PEM CA certificates trusted for TLS to providers and origins, in addition to the system's.
            """),
        OptionSpec("timeout", value: "seconds", help: "Time limit of each provider attempt, LocalDNS and connect."),
        OptionSpec("resolve", value: "host:port:ip", help: """
            A static answer tried before any provider, like curl's --resolve (repeatable).
            """),
        OptionSpec("protect", value: "pattern", help: """
            Only these hosts (exact or *.domain) go through HTTPDNS; others use LocalDNS (repeatable). \
            Default: every host.
            """),
        OptionSpec("json", help: "Print one JSON object per result line."),
    ]

    var providerSpecs: [HTTPDNSProviderSpec] = []
    var localDNS: LocalDNSChoice = .system
    var httpdnsOnly = false
    var allowPrivate = false
    var family: HTTPDNSAddressFamily = .ipv4
    var cacert: String?
    var timeout: Double?
    var resolveEntries: [String] = []
    var protect: [String] = []
    var json = false
    /// The whole config file, for command-specific keys (`fallbackIPs`, `serve`).
    var config = ConfigFile()

    /// Merges the config file and the flags.
    /// - Throws: ``UsageError`` for any value that cannot work.
    init(_ parsed: ParsedArguments, command: String) throws(UsageError) {
        func bad(_ message: String) -> UsageError { UsageError(message, command: command) }
        if let path = parsed.last("config") {
            config = try ConfigFile.load(path: path, command: command)
        }
        let providers = parsed.has("provider") ? parsed.all("provider") : (config.providers ?? SharedOptions.defaultProviders)
        guard !providers.isEmpty else { throw bad("no provider given") }
        for text in providers {
            do {
                providerSpecs.append(try HTTPDNSProviderSpec(parsing: text))
            } catch {
                throw bad("bad --provider '\(text)': \(SharedOptions.detail(error))")
            }
        }
        if let text = parsed.last("local-dns") ?? config.localDNS {
            localDNS = try SharedOptions.parseLocalDNS(text, bad)
        }
        httpdnsOnly = parsed.flag("httpdns-only") || (config.httpdnsOnly ?? false)
        allowPrivate = parsed.flag("allow-private") || (config.allowPrivate ?? false)
        if let text = parsed.last("type") ?? config.type {
            switch text.uppercased() {
            case "A", "IPV4", "4": family = .ipv4
            case "AAAA", "IPV6", "6": family = .ipv6
            case "BOTH", "ANY", "ALL": family = .both
            default: throw bad("bad --type '\(text)': expected A, AAAA or BOTH")
            }
        }
        cacert = parsed.last("cacert") ?? config.cacert
        if let text = parsed.last("timeout") {
            guard let seconds = Double(text) else { throw bad("bad --timeout '\(text)': expected seconds") }
            timeout = seconds
        } else {
            timeout = config.timeout
        }
        if let timeout, !(timeout > 0 && timeout <= 3_600) {
            throw bad("bad timeout \(timeout): expected more than 0 and at most 3600 seconds")
        }
        resolveEntries = parsed.has("resolve") ? parsed.all("resolve") : (config.resolve ?? [])
        do {
            _ = try HTTPDNSStaticResolver(curlStyle: resolveEntries)
        } catch {
            throw bad("bad --resolve: \(SharedOptions.detail(error))")
        }
        protect = parsed.has("protect") ? parsed.all("protect") : (config.protect ?? [])
        json = parsed.flag("json")
    }

    /// `system` or `udp=IP:PORT` (port 53 when left out).
    static func parseLocalDNS(_ text: String, _ bad: (String) -> UsageError) throws(UsageError) -> LocalDNSChoice {
        if text.lowercased() == "system" { return .system }
        let lower = text.lowercased()
        guard lower.hasPrefix("udp=") else { throw bad("bad --local-dns '\(text)': expected system or udp=IP:PORT") }
        let location = String(text.dropFirst(4))
        if let (address, port) = HTTPDNSProviderSpec.parseHostPort(location) { return .server(address, port: port) }
        if let address = HTTPDNSIPAddress(location) { return .server(address, port: 53) }
        throw bad("bad --local-dns '\(text)': expected udp=IP:PORT ([IPv6]:PORT for IPv6)")
    }

    /// The TLS trust for providers and origins: the system bundle plus `--cacert`.
    /// - Throws: ``UsageError`` when the file cannot be read or holds no certificate.
    func makeTrust(command: String) throws(UsageError) -> HTTPDNSTrust {
        try SharedOptions.makeTrust(cacert: cacert, command: command)
    }

    /// The system bundle plus the PEM file `cacert`, or `.system` without one.
    static func makeTrust(cacert: String?, command: String) throws(UsageError) -> HTTPDNSTrust {
        guard let cacert else { return .system }
        guard let extra = FileManager.default.contents(atPath: cacert), extra.count <= 16 << 20 else {
            throw UsageError("cannot read --cacert file \(cacert)", command: command)
        }
        guard String(decoding: extra, as: UTF8.self).contains("-----BEGIN CERTIFICATE-----") else {
            throw UsageError("--cacert file \(cacert) holds no PEM certificate", command: command)
        }
        var bundle = Data()
        let systemBundles = ["/etc/ssl/certs/ca-certificates.crt", "/etc/pki/tls/certs/ca-bundle.crt", "/etc/ssl/cert.pem"]
        if let path = systemBundles.first(where: { FileManager.default.isReadableFile(atPath: $0) }),
           let system = FileManager.default.contents(atPath: path) {
            bundle.append(system)
            bundle.append(Data("\n".utf8))
        }
        bundle.append(extra)
        return .caPEM(bundle)
    }

    /// The engine these options describe.
    /// - Throws: ``UsageError`` when a provider spec cannot be turned into a resolver.
    func makeEngine(transport: HTTPTransport, trust: HTTPDNSTrust, command: String) throws(UsageError) -> HTTPDNSEngine {
        let perRequest = Duration.milliseconds(Int64((timeout ?? 5) * 1000))
        var resolvers: [any HTTPDNSResolver] = []
        for spec in providerSpecs {
            do {
                resolvers.append(try spec.makeResolver(transport: transport, timeout: perRequest))
            } catch {
                throw UsageError("bad --provider '\(spec)': \(SharedOptions.detail(error))", command: command)
            }
        }
        var configuration = HTTPDNSConfiguration(resolvers: resolvers)
        configuration.trust = trust
        do {
            configuration.staticEntries = try HTTPDNSStaticResolver.curlStyleTable(resolveEntries)
        } catch {
            throw UsageError("bad --resolve: \(SharedOptions.detail(error))", command: command)
        }
        switch localDNS {
        case .system: configuration.localDNS = .system
        case .server(let address, let port): configuration.localDNS = .server(address, port: port)
        }
        configuration.failover.httpdnsOnly = httpdnsOnly
        configuration.hygiene = HTTPDNSAnswerHygiene(allowPrivate: allowPrivate)
        configuration.family = family
        if !protect.isEmpty { configuration.protectedHosts = HTTPDNSHostPolicy(protect) }
        if let timeout {
            configuration.timeouts.perAttempt = .seconds(timeout)
            configuration.timeouts.httpdnsBudget = .seconds(timeout * Double(max(1, resolvers.count)))
            configuration.timeouts.localDNS = .seconds(timeout)
        }
        return HTTPDNSEngine(configuration: configuration)
    }

    /// The short detail of an error from the library, without repeating the code name twice.
    static func detail(_ error: any Error) -> String {
        if let error = error as? HTTPDNSError { return error.detail }
        return String(describing: error)
    }
}
