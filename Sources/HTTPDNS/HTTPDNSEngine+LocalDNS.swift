import HTTPDNSCore

extension HTTPDNSEngine {
    /// The fallback resolver the configuration asks for.
    static func makeLocalResolver(_ configuration: HTTPDNSConfiguration) -> (any HTTPDNSResolver)? {
        switch configuration.localDNS {
        case .custom(let resolver):
            return resolver
        case .system, .server:
            return nil  // FIXME(session): wire DNSSockets resolvers once that module lands
        }
    }
}
