import HTTPDNS
import HTTPDNSCore

/// How `httpdns resolve` turns a host into addresses: `--resolve` entries first (as curl does),
/// then — for protected hosts — the engine (HTTPDNS providers in order, LocalDNS fallback), and for
/// hosts outside `--protect` the LocalDNS resolver alone.
///
/// `fetch` does not use it: there ``HTTPDNSClient`` asks the engine, which holds the `--resolve`
/// entries as its first provider (see `Command.makeFetchEngine`).
struct ToolResolver: Sendable {
    let engine: HTTPDNSEngine
    let staticEntries: StaticResolver
    let hasStaticEntries: Bool
    let localDNS: any HTTPDNSResolver
    let family: HTTPDNSAddressFamily

    /// Resolves `host`.
    /// - Throws: ``HTTPDNSError``.
    func resolve(_ host: String) async throws(HTTPDNSError) -> HTTPDNSAnswer {
        if let literal = HTTPDNSIPAddress(host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host) {
            return HTTPDNSAnswer(host: host, addresses: [literal], ttl: 0, source: "literal", origin: .static)
        }
        let name = HTTPDNSHostPolicy.normalize(host)
        if hasStaticEntries, let records = try? await staticEntries.resolve(name, family: family) {
            let addresses = records.addresses(for: family)
            if !addresses.isEmpty {
                return HTTPDNSAnswer(
                    host: name, addresses: addresses, ttl: records.ttl ?? 0, source: "--resolve", origin: .static)
            }
        }
        do {
            if !engine.protects(name) {
                let records = try await localDNS.resolve(name, family: family)
                let addresses = records.addresses(for: family)
                guard !addresses.isEmpty else {
                    throw HTTPDNSError(.noAddress, "no \(family) address", host: name, source: localDNS.name)
                }
                return HTTPDNSAnswer(
                    host: name, addresses: addresses, ttl: records.ttl ?? 0, source: localDNS.name, origin: .localDNS)
            }
            return try await engine.resolve(name, family: family)
        } catch let error as HTTPDNSError {
            throw error
        } catch {
            throw HTTPDNSError(.transport, String(describing: error), host: name)
        }
    }
}
