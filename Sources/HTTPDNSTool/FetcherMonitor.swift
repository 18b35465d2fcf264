import HTTPDNSCore

/// Tells `-v` what the fetch's engine does, as it happens: provider failures, the LocalDNS fallback,
/// stale answers. (The one error line of a failed fetch comes from the client's `URLError`.)
final class FetcherMonitor: HTTPDNSEventMonitor {
    /// Print resolution events on stderr (`-v`).
    let verbose: Bool

    init(verbose: Bool) {
        self.verbose = verbose
    }

    func lookupFailed(host: String, family: HTTPDNSAddressFamily, error: HTTPDNSError) {
        if verbose { Output.diagnostic("* cannot resolve \(host): \(Command.explain(error))") }
    }

    func resolverFailed(resolver: String, host: String, error: HTTPDNSError) {
        if verbose { Output.diagnostic("* \(resolver) failed for \(host): \(error.code): \(error.detail)") }
    }

    func fellBackToLocalDNS(host: String) {
        if verbose { Output.diagnostic("* asking LocalDNS for \(host)") }
    }

    func cacheServedStale(host: String, family: HTTPDNSAddressFamily) {
        if verbose { Output.diagnostic("* refreshing \(host) failed; using the stale answer (RFC 8767)") }
    }
}
