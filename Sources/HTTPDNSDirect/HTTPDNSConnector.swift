import HTTPDNS
import HTTPDNSCore
import HTTPDNSTransport

/// The one failover from a host name to an address that connects, shared by ``HTTPDNSClient``
/// (whose attempts are libcurl transfers) and the loopback proxy (whose attempts are its own
/// non-blocking connects).
///
/// It decides which address comes next and books what an attempt came to; the caller makes the
/// attempts. The order: the engine's answer (fastest known first, IPv6 and IPv4 interleaved),
/// LocalDNS's addresses once those are used up, then — for a host that could not be found or
/// connected — the domain-block redirect endpoint (seed 003), whose addresses are then used
/// directly for their TTL. When the engine's answer came from its cache and all of it failed,
/// HTTPDNS is asked once more bypassing the cache (seed 002: "ask whether the set of addresses
/// should change") before LocalDNS. A refused or timed-out address is cooled down in the engine, and
/// every failed address of a protected host is queued as a failure report when reports are on.
package final class HTTPDNSConnector: Sendable {
    /// The resolution engine.
    package let engine: HTTPDNSEngine
    /// The block-redirect endpoint, already trusting the engine's CA settings; nil for none.
    package let blockRedirect: (any HTTPDNSResolver)?
    /// Told of each failed address.
    package let monitor: (any HTTPDNSConnectionMonitor)?
    /// What an address never measured counts as when ordering by connect time.
    package let unmeasuredConnectTime: Duration
    /// Sends the failure reports; nil when reports are off.
    package let reporter: FailureReporter?
    /// Hosts sent to the block-redirect addresses for now (seed 003, made sticky).
    private let blockedHosts = HTTPDNSLock(BlockRedirectMemory())

    /// - Parameters:
    ///   - engine: resolves every host and keeps the cool-downs and connect times.
    ///   - blockRedirect: the domain-block redirect endpoint; nil for none.
    ///   - monitor: told of failed addresses.
    ///   - unmeasuredConnectTime: an unmeasured address's place in the connect order.
    ///   - reports: where failed addresses are reported; nil for nowhere.
    ///   - transport: sends the reports.
    package init(
        engine: HTTPDNSEngine, blockRedirect: (any HTTPDNSResolver)?, monitor: (any HTTPDNSConnectionMonitor)?,
        unmeasuredConnectTime: Duration, reports: HTTPDNSFailureReports? = nil, transport: HTTPTransport = .shared
    ) {
        self.engine = engine
        self.blockRedirect = blockRedirect.map { HTTPDNSEngine.trusting(engine.configuration.trust, $0) }
        self.monitor = monitor
        self.unmeasuredConnectTime = unmeasuredConnectTime
        self.reporter = reports.map {
            FailureReporter(
                settings: $0, transport: transport, trust: engine.configuration.trust, clock: engine.configuration.clock,
                monitor: monitor)
        }
    }

    /// The remembered block-redirect addresses of `host` (normalised), if it was found blocked lately.
    package func redirectedAddresses(for host: String) -> [HTTPDNSIPAddress]? {
        let now = engine.configuration.clock.now()
        return blockedHosts.withLock { $0.addresses(for: host, now: now) }
    }

    /// Starts the plan of a protected host: its remembered redirect addresses when it was found
    /// blocked lately (no lookup, no walk over dead addresses), else the engine's answer.
    package func begin(_ plan: inout AddressPlan, report: HTTPDNSLock<HTTPDNSConnectionReport>) async {
        if let sticky = redirectedAddresses(for: plan.host) {
            plan.sticky = true
            plan.add(sticky)
            plan.localTried = true
            plan.redirectTried = true
            report.withLock { $0.viaBlockRedirect = true }
        } else {
            await resolve(into: &plan, report: report)
        }
    }

    /// Asks the engine for the plan's host and queues its addresses, fastest known first.
    package func resolve(into plan: inout AddressPlan, report: HTTPDNSLock<HTTPDNSConnectionReport>) async {
        let start = ContinuousClock.now
        do {
            let answer = try await engine.resolve(plan.host)
            plan.add(engine.connectOrder(answer.addresses, unknown: unmeasuredConnectTime))
            plan.localTried = answer.origin == .localDNS
            plan.reaskable = answer.fromCache
            report.withLock { $0.answer = answer }
        } catch {
            plan.resolutionError = error
            plan.localTried = true  // the engine already fell back to LocalDNS (unless HTTPDNS-only)
        }
        let elapsed = start.duration(to: .now)
        report.withLock { $0.timings.resolution = elapsed }
    }

    /// The next address when every attempt so far failed: the answer's, then LocalDNS's, then the
    /// block-redirect endpoint's. `.some(nil)` is the plan's one unpinned attempt (libcurl's own
    /// resolver, or a proxy); nil when nothing is left.
    package func nextAddress(
        _ plan: inout AddressPlan, lastError: HTTPTransportError?, report: HTTPDNSLock<HTTPDNSConnectionReport>
    ) async -> HTTPDNSIPAddress?? {
        if plan.unpinned, !plan.unpinnedUsed {
            plan.unpinnedUsed = true
            return .some(nil)
        }
        if let next = plan.next() { return next }
        if plan.sticky {
            // The remembered redirect addresses failed too: forget them and go through HTTPDNS again.
            plan.sticky = false
            plan.localTried = false
            plan.redirectTried = false
            blockedHosts.withLock { $0.forget(plan.host) }
            report.withLock { $0.viaBlockRedirect = false }
            await resolve(into: &plan, report: report)
            if let next = plan.next() { return next }
        }
        guard plan.protected else { return nil }
        if plan.reaskable, !plan.reasked, !plan.unpinned, let next = await reask(&plan, report: report) { return next }
        if !plan.localTried, !plan.unpinned {
            plan.localTried = true
            if let local = try? await engine.resolveLocally(plan.host) {
                plan.add(local.addresses)
                if let next = plan.next() { return next }
            }
        }
        let blocked = lastError.map(HTTPDNSConnector.isBlockSignal) ?? (plan.resolutionError != nil)
        if !plan.redirectTried, blocked, let blockRedirect {
            plan.redirectTried = true
            let family = engine.configuration.family
            if let records = try? await blockRedirect.resolve(plan.host, family: family) {
                // The redirect endpoint is a network answer like any HTTPDNS one: same hygiene rules
                // (and, on an IPv6-only network, the engine's NAT64 synthesis).
                let kept = engine.usableAddresses(engine.configuration.hygiene.filter(records, family: family).kept, family: family)
                plan.redirect = (kept, blockRedirectTTL(records.ttl))
                plan.add(kept)
                report.withLock { report in
                    report.viaBlockRedirect = true
                    if let proxy = plan.proxy { report.proxy = .bypassed(ProxyEnvironment.redacted(proxy)) }
                }
                if let next = plan.next() { return next }
            }
        }
        return nil
    }

    /// Every address of a cached answer failed: asks HTTPDNS once more, bypassing the cache, and
    /// returns the first address not tried yet of what it says (nil when nothing new came).
    private func reask(_ plan: inout AddressPlan, report: HTTPDNSLock<HTTPDNSConnectionReport>) async -> HTTPDNSIPAddress? {
        plan.reasked = true
        guard let answer = try? await engine.resolveBypassingCache(plan.host) else { return nil }
        plan.add(engine.connectOrder(answer.addresses, unknown: unmeasuredConnectTime))
        // The engine fell back to LocalDNS itself: no need to ask it again.
        if answer.origin == .localDNS { plan.localTried = true }
        guard let next = plan.next() else { return nil }
        report.withLock { $0.answer = answer }
        return next
    }

    /// An attempt at `address` failed to connect: the monitor hears of it, a refused or timed-out
    /// address is cooled down so that no other request waits on it, and the failure is queued as a
    /// report when the host is a protected one (a literal or unprotected host is nobody's business).
    package func connectFailed(_ address: HTTPDNSIPAddress, error: HTTPTransportError, plan: AddressPlan) {
        connectFailed(address, error: error, reportingAs: plan.protected ? (plan.host, plan.port) : nil)
    }

    /// An attempt at `address` failed to connect; `target` is the protected host (normalised) and
    /// port to report it under, nil to report nothing.
    package func connectFailed(_ address: HTTPDNSIPAddress, error: HTTPTransportError, reportingAs target: (host: String, port: Int)?) {
        monitor?.connectionFailed(address: address, error: error.urlError)
        if HTTPDNSConnector.isConnectFailure(error) { engine.reportUnreachable(address) }
        if let reporter, let target, let errorClass = HTTPDNSReportWire.ErrorClass(error) {
            reporter.record(host: target.host, address: address, port: target.port, error: errorClass)
        }
    }

    /// Keeps the block-redirect addresses for the host when one of them answered (seed 003, sticky).
    package func connected(_ plan: AddressPlan, at address: HTTPDNSIPAddress?) {
        guard let (addresses, ttl) = plan.redirect, let address, addresses.contains(address) else { return }
        let now = engine.configuration.clock.now()
        blockedHosts.withLock { $0.remember(plan.host, addresses: addresses, ttl: ttl, now: now) }
    }

    /// Failures that look like a blocked domain (seed 003 names "cannot find host", "cannot connect
    /// to host" and CFNetwork's 310, the HTTPS proxy failing): plus a connect that timed out before
    /// a byte of the request left, which is what a blackholed address looks like.
    package static func isBlockSignal(_ error: HTTPTransportError) -> Bool {
        switch error.code {
        case .cannotFindHost, .cannotConnectToHost, .proxyConnectionFailed: true
        case .timedOut: error.requestBytesSent == 0
        default: false
        }
    }

    /// Failures where the request surely or probably did not reach a server: worth the next address.
    package static func isConnectFailure(_ error: HTTPTransportError) -> Bool {
        switch error.code {
        case .cannotConnectToHost, .cannotFindHost, .proxyConnectionFailed: true
        case .timedOut, .networkConnectionLost: error.requestBytesSent == 0
        default: false
        }
    }

    /// How long a redirect answer with `ttl` (nil: none given) keeps its host redirected: the
    /// engine's cache bounds apply, as to any answer.
    private func blockRedirectTTL(_ ttl: Int?) -> Int {
        let policy = engine.configuration.cache.policy
        return min(max(ttl ?? policy.defaultTTL, policy.minimumTTL), policy.maximumTTL)
    }
}
