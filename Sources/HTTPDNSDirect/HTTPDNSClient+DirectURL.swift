import Foundation
@_spi(HTTPDNSPackage) import HTTPDNSCore

extension HTTPDNSClient {
    /// For consumers that take only a URL (a media player, say): the URL with its host replaced by
    /// an address from the engine, plus the headers to send with it (`Host`).
    ///
    /// Only for plain HTTP. With HTTPS the consumer would put the IP into SNI and verify the
    /// certificate against the IP, which fails (or, worse, tempts people to turn verification off);
    /// send HTTPS through `HTTPDNSURLProtocol` or ``data(for:)`` instead.
    ///
    /// - Throws: `URLError(.unsupportedURL)` for HTTPS and non-HTTP URLs; resolution errors.
    public func directURL(for url: URL) async throws -> (url: URL, headers: [String: String]) {
        guard HTTPDNSASCII.equalsIgnoringCase(url.scheme ?? "", "http"), var components = URLComponents(url: url, resolvingAgainstBaseURL: true),
              let host = components.host, !host.isEmpty
        else {
            throw URLError(.unsupportedURL, userInfo: [
                NSLocalizedDescriptionKey: "A direct URL works for http:// only; HTTPS needs the real host for SNI and verification.",
            ])
        }
        let answer = try await engine.resolve(host)
        guard let address = answer.addresses.first else {
            throw URLError(.cannotFindHost, userInfo: [NSLocalizedDescriptionKey: "No address was found for \(host)."])
        }
        let hostHeader = components.port.map { "\(host):\($0)" } ?? host
        components.host = address.family == .v6 ? "[\(address)]" : address.description
        guard let direct = components.url else { throw URLError(.badURL) }
        return (direct, ["Host": hostHeader])
    }
}
