import HTTPDNSCore
import HTTPDNSOperations

extension HTTPDNSNetwork {
    /// Parses one network of a configuration (a view's `networks`, `--allow-from`), naming `text`
    /// in the error.
    ///
    /// - Throws: ``HTTPDNSServiceError`` `.invalidConfiguration`: `network "…": reason`.
    package init(_ text: String) throws(HTTPDNSServiceError) {
        switch Self.parse(Substring(text)) {
        case .success(let network): self = network
        case .failure(let fault):
            throw HTTPDNSServiceError(.invalidConfiguration, "network \(HTTPDNSZone.shown(text)): \(fault.reason)")
        }
    }
}
