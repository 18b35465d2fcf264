import HTTPDNS
import HTTPDNSCore

extension DNSStubResolver {
    /// Starts over after the host moved to another network: the engine drops what it learnt on the
    /// old one (``HTTPDNSEngine/networkDidChange()``: cool-downs, rankings, its answers kept only as
    /// stale), the DoH upstreams' connections are dropped (`renewing`'s transports are replaced),
    /// the upstreams' health and rankings start over, and the wire cache's negative answers expire
    /// while its positive ones are kept (``DNSStubNetworkChange``).
    ///
    /// Called by the rtnetlink watcher's thread once per burst of changes; blocks for moments (an
    /// old transport stopping), so never on the cooperative pool.
    /// - Parameter renewing: the transports of the DoH upstreams (every group's).
    /// - Returns: what changed in the stub's own state, for the log line.
    @discardableResult
    package func networkDidChange(renewing transports: [DNSStubDoHTransport] = []) -> DNSStubNetworkChange {
        engine.networkDidChange()
        for transport in transports { transport.renew() }
        let groups = [upstreams] + routeUpstreams
        var rankings = groups.map(\.currentRanking)
        let at = now
        let change = cache.withLock { cache in
            health.withLock { health in
                DNSStubNetworkChange.apply(cache: &cache, health: &health, rankings: &rankings, now: at)
            }
        }
        for (group, ranking) in zip(groups, rankings) { group.currentRanking = ranking }
        if change.negativeAnswersExpired > 0 { cacheChanges.withLock { $0 &+= 1 } }
        return change
    }
}
