import HTTPDNSCore

/// The `--fallback-ips` endpoint as ``HTTPDNSClient``'s block redirect (seed 003), telling `-v`
/// what it answered. The client applies the engine's hygiene to these answers, as to any network
/// answer (`--allow-private` decides about loopback and private addresses); nothing is filtered here.
struct FetcherBlockRedirect: HTTPDNSResolver {
    let endpoint: any HTTPDNSResolver
    let monitor: FetcherMonitor

    var name: String { endpoint.name }

    /// - Throws: the endpoint's ``HTTPDNSError``.
    func resolve(_ host: String, family: HTTPDNSAddressFamily) async throws -> HTTPDNSRecordSet {
        do {
            let records = try await endpoint.resolve(host, family: family)
            if monitor.verbose {
                let list = records.addresses(for: family).map(\.description).joined(separator: ", ")
                Output.diagnostic("* block redirect \(name) answered \(list.isEmpty ? "no address" : list); retrying there")
            }
            return records
        } catch {
            if monitor.verbose { Output.diagnostic("* block redirect \(name) failed: \(error)") }
            throw error
        }
    }
}
