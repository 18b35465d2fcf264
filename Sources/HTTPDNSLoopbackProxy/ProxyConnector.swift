import HTTPDNS
import HTTPDNSCore
import HTTPDNSDirect
import HTTPDNSTransport

/// Chooses and connects the upstream of one proxied connection, as a task off the loop thread.
///
/// Address order and failover are ``HTTPDNSConnector``'s, the same as ``HTTPDNSClient``'s: the
/// engine's answer (IPv6 and IPv4 interleaved), LocalDNS's addresses once those are used up, then —
/// for a host that could not be found or connected — the domain-block redirect endpoint. Each refused
/// or timed-out address is cooled down in the engine. Hosts the engine does not protect are resolved
/// through its LocalDNS alone; IP literals are used as they are. Every connect itself runs on the loop.
struct ProxyConnector: Sendable {
    let failover: HTTPDNSConnector

    var engine: HTTPDNSEngine { failover.engine }

    /// What one connect attempt, run by the loop, came to.
    enum AttemptResult: Sendable {
        /// Connected; the loop already took the socket over.
        case connected
        /// The client connection is gone (closed, timed out, proxy stopped): stop trying.
        case gone
        case failed(HTTPTransportError)
    }

    /// How the whole choice ended when no address connected: the status to answer with and why.
    struct Failure: Sendable {
        var status: Int
        var reason: String
    }

    /// Tries addresses for `host`:`port` until one connects (the loop then owns it) or none is left
    /// (then the loop answers the client with the failure's status).
    func connect(id: UInt64, host: String, port: UInt16, policy: ProxyTargetPolicy, loop: ProxyLoop) async {
        let report = HTTPDNSLock(HTTPDNSConnectionReport(
            host: host, answer: nil, attempts: [], connectedAddress: nil, certificateVerified: false,
            viaBlockRedirect: false, httpVersion: "1.1"))
        var plan = AddressPlan()
        plan.host = HTTPDNSHostPolicy.normalize(host)
        plan.port = Int(port)
        if let literal = HTTPDNSIPAddress(host) {
            plan.add([literal])
        } else if engine.protects(host) {
            // As the client's exchange starts: a host found blocked lately goes straight to its
            // remembered redirect addresses; otherwise the engine's answer, fastest known first.
            plan.protected = true
            await failover.begin(&plan, report: report)
        } else {
            // Not protected: LocalDNS's addresses, and no block redirect, as in the client.
            do {
                plan.add(try await engine.resolveLocally(host).addresses)
            } catch {
                plan.resolutionError = error
            }
        }

        var lastError: HTTPTransportError?
        var forbidden = 0
        while let next = await failover.nextAddress(&plan, lastError: lastError, report: report), let address = next {
            guard policy.allows(address, port: port) else {
                forbidden += 1
                report.withLock { $0.attempts.append(.init(address: address, failure: "forbidden by the proxy's target policy")) }
                continue
            }
            let number = report.withLock { $0.attempts.count } + 1
            switch await loop.attempt(id: id, address: address, port: port, attempt: number) {
            case .connected:
                failover.connected(plan, at: address)
                return
            case .gone:
                return
            case .failed(let error):
                report.withLock { $0.attempts.append(.init(address: address, failure: error.description)) }
                failover.connectFailed(address, error: error, plan: plan)
                lastError = error
            }
        }
        let failure = ProxyConnector.failure(
            report: report.withLock { $0 }, lastError: lastError, forbidden: forbidden, resolution: plan.resolutionError)
        loop.execute { loop.connectFailed(id: id, failure: failure) }
    }

    /// 403 when every address was forbidden, 504 when the last attempt timed out, 502 otherwise.
    static func failure(
        report: HTTPDNSConnectionReport, lastError: HTTPTransportError?, forbidden: Int, resolution: (any Error)?
    ) -> Failure {
        if forbidden > 0, forbidden == report.attempts.count {
            return Failure(status: 403, reason: "target forbidden by the proxy's policy")
        }
        if let lastError {
            let tried = report.attempts.map { "\($0.address?.description ?? "?"): \($0.failure ?? "")" }.joined(separator: "; ")
            return Failure(status: lastError.code == .timedOut ? 504 : 502, reason: "no address connected (\(tried))")
        }
        if let error = resolution as? HTTPDNSError {
            return Failure(status: 502, reason: "cannot resolve \(report.host): \(error.code)")
        }
        return Failure(status: 502, reason: "no address for \(report.host)")
    }
}
