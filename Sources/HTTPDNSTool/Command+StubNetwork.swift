import HTTPDNS
import HTTPDNSServer
import HTTPDNSStub
import HTTPDNSTransport

extension Command {
    /// Starts the rtnetlink watcher (``HTTPDNSNetworkWatcher``: an address or a default route came
    /// or went, debounced 500 ms) that re-bootstraps the stub on a network change
    /// (``DNSStubResolver/networkDidChange(renewing:)``) and says so on stderr.
    /// - Returns: the watcher to stop at shutdown; nil, with a warning, where it cannot run.
    static func stubWatchNetwork(_ resolver: DNSStubResolver, renewing transport: HTTPTransport) -> HTTPDNSNetworkWatcher? {
        do {
            return try HTTPDNSNetworkWatcher(debounce: .milliseconds(500)) {
                let change = resolver.networkDidChange(renewing: [transport])
                Output.diagnostic("""
                    httpdns stub: network changed: new HTTP connections (providers and DoH upstreams), \(change.rankingsReset) \
                    upstream rankings and the down state reset, \(change.negativeAnswersExpired) negative answers expired, \
                    the engine's answers kept as stale
                    """)
            }
        } catch {
            Output.diagnostic("httpdns stub: warning: network changes not watched: \(error)")
            return nil
        }
    }
}
