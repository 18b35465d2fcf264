import HTTPDNSCore

/// Watches the fetch's engine: keeps each host's last resolution failure and the addresses it was
/// given, and tells `-v` about provider failures as they happen.
///
/// ``HTTPDNSClient`` reports a failed request as one `URLError`; the failure the engine saw (every
/// provider with its reason) and the addresses answered are what the one error line needs to say
/// "cannot resolve HOST: …" or "cannot connect … (tried A, B)".
final class FetcherMonitor: HTTPDNSEventMonitor {
    private struct State {
        var failures: [String: HTTPDNSError] = [:]
        var addresses: [String: [IPAddress]] = [:]
    }

    /// The name of the `--resolve` entries' resolver in the engine.
    static let staticSource = "static"

    private let state = HTTPDNSLock(State())
    /// Print resolution events on stderr (`-v`).
    let verbose: Bool

    init(verbose: Bool) {
        self.verbose = verbose
    }

    /// The last resolution failure of `host`, if it failed.
    func failure(for host: String) -> HTTPDNSError? {
        let name = HTTPDNSHostPolicy.normalize(host)
        return state.withLock { $0.failures[name] }
    }

    /// Every address `host` was given (by the engine or the block redirect), in order, once each.
    func addresses(for host: String) -> [IPAddress] {
        let name = HTTPDNSHostPolicy.normalize(host)
        return state.withLock { $0.addresses[name] ?? [] }
    }

    /// Records addresses given to `host` outside the engine (the block-redirect endpoint's).
    func note(_ addresses: [IPAddress], for host: String) {
        let name = HTTPDNSHostPolicy.normalize(host)
        state.withLock { state in
            let known = state.addresses[name] ?? []
            state.addresses[name] = known + addresses.filter { !known.contains($0) }
        }
    }

    func lookupAnswered(_ answer: HTTPDNSAnswer) {
        note(answer.addresses, for: answer.host)
        let name = HTTPDNSHostPolicy.normalize(answer.host)
        state.withLock { _ = $0.failures.removeValue(forKey: name) }
    }

    func lookupFailed(host: String, family: HTTPDNSAddressFamily, error: HTTPDNSError) {
        let name = HTTPDNSHostPolicy.normalize(host)
        state.withLock { $0.failures[name] = error }
        if verbose { Output.diagnostic("* cannot resolve \(host): \(Command.explain(error))") }
    }

    func resolverFailed(resolver: String, host: String, error: HTTPDNSError) {
        if verbose, !(resolver == FetcherMonitor.staticSource && error.code == .nameNotFound) { Output.diagnostic("* \(resolver) failed for \(host): \(error.code): \(error.detail)") }
    }

    func fellBackToLocalDNS(host: String) {
        if verbose { Output.diagnostic("* asking LocalDNS for \(host)") }
    }

    func cacheServedStale(host: String, family: HTTPDNSAddressFamily) {
        if verbose { Output.diagnostic("* refreshing \(host) failed; using the stale answer (RFC 8767)") }
    }
}
