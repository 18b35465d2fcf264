import HTTPDNSCore

/// The `--fallback-ips` endpoint as ``HTTPDNSClient``'s block redirect (seed 003).
///
/// Its answers pass the same hygiene as HTTPDNS answers (`--allow-private` decides about loopback
/// and private addresses): a redirect endpoint is trusted no more than a provider. With `-v` the
/// addresses are told about when they arrive.
struct FetcherBlockRedirect: HTTPDNSResolver {
    let endpoint: any HTTPDNSResolver
    let hygiene: HTTPDNSAnswerHygiene
    let monitor: FetcherMonitor

    var name: String { endpoint.name }

    /// - Throws: ``HTTPDNSError``: the endpoint's, or `.noAddress` when hygiene kept nothing.
    func resolve(_ host: String, family: HTTPDNSAddressFamily) async throws -> HTTPDNSRecordSet {
        let records: HTTPDNSRecordSet
        do {
            records = try await endpoint.resolve(host, family: family)
        } catch {
            if monitor.verbose { Output.diagnostic("* block redirect \(name) failed: \(error)") }
            throw error
        }
        let kept = hygiene.filter(records.addresses(for: family)).kept
        guard !kept.isEmpty else {
            if monitor.verbose { Output.diagnostic("* block redirect \(name) gave no usable address") }
            throw HTTPDNSError(.noAddress, "no usable address from the block redirect", host: host, source: name)
        }
        if monitor.verbose {
            Output.diagnostic("* block redirect \(name) gave \(kept.map(\.description).joined(separator: ", ")); retrying there")
        }
        return HTTPDNSRecordSet(
            host: host, ipv4: kept.filter { $0.family == .v4 }, ipv6: kept.filter { $0.family == .v6 }, ttl: records.ttl)
    }
}
