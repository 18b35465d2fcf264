import DNSStubCore
import HTTPDNS
import HTTPDNSCore
import HTTPDNSTransport

extension DNSStubResolver {
    /// Starts over after the host moved to another network: the HTTP connections to the providers
    /// and the DoH upstreams are dropped (`renewing`'s ``HTTPTransport/renewConnections()``: a kept
    /// connection may come from an address that is gone, and a request on it would wait for its
    /// timeout), the engine drops what it learnt on the old network (``HTTPDNSEngine/networkDidChange()``:
    /// cool-downs, rankings, its answers kept only as stale), the upstreams' health and rankings
    /// start over, and the wire cache's negative answers expire while its positive ones are kept
    /// (``DNSStubNetworkChange``).
    ///
    /// Called by the rtnetlink watcher's thread once per burst of changes; blocks for moments (an
    /// old transport stopping), so never on the cooperative pool.
    /// - Parameter renewing: the transports of the engine's providers and the DoH upstreams.
    /// - Returns: what changed in the stub's own state, for the log line.
    @discardableResult
    package func networkDidChange(renewing transports: [HTTPTransport] = []) -> DNSStubNetworkChange {
        // Connections first: the engine's pre-resolution starts at once, on the new ones.
        for transport in transports { transport.renewConnections() }
        engine.networkDidChange()
        generation.add(1, ordering: .releasing)
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
