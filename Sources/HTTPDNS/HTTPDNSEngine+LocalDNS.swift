import HTTPDNSCore

extension HTTPDNSEngine {
    /// The fallback resolver the configuration asks for.
    static func makeLocalResolver(_ configuration: HTTPDNSConfiguration) -> (any HTTPDNSResolver)? {
        switch configuration.localDNS {
        case .custom(let resolver):
            return resolver
        case .system:
            return SystemDNSResolver(timeout: .milliseconds(Int64(configuration.timeouts.localDNS * 1000)))
        case .server(let address, let port):
            return DNSServerResolver(server: address, port: port, timeout: configuration.timeouts.localDNS)
        }
    }
}
