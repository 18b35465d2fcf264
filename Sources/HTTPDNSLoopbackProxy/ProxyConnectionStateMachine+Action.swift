import HTTPDNSCore
import HTTPDNSTransport

extension ProxyConnectionStateMachine {
    /// What the connection does after an event. One value per event, no array: where an event needs
    /// several steps (close a socket, report, answer), one case carries them in the order they run.
    /// The cases that carry much and come once per connection at most are `indirect`, so that the
    /// value every event returns stays small (73 bytes, not 513).
    enum Action {
        case none
        /// Read the request head while ``headRoom(scratch:)`` allows, each read going to
        /// ``headBytesRead(_:short:now:cachedAddress:)``.
        case readHead
        /// Start a non-blocking connect for `plan`, then report how it started with
        /// ``attemptStarted(_:_:now:)``.
        case connect(AttemptPlan)
        /// Close `closing` (a failed attempt's socket), cool `cooling` down in the engine (the fast
        /// path's address that failed), then start the connector task for `host`:`port`.
        indirect case startConnector(host: String, port: UInt16, cooling: FailedAddress?, closing: Upstream?)
        /// Close `closing` (the attempt's socket), then give the connector its attempt's result.
        indirect case deliver(Deliver, ProxyConnector.AttemptResult, closing: Upstream?)
        /// The attempt's socket failed: read its pending error, then report ``attemptFailed(_:_:now:)``.
        case readConnectError(Int32)
        /// Report the tunnel opened, run the relay (``relay(now:client:upstream:_:)``), then tell the
        /// connector (if it chose the address).
        case startRelay(Opened, Deliver?)
        /// Change what the sockets are watched for (nil: unchanged).
        case watch(client: Interest?, upstream: (Upstream, Interest)?)
        /// Let go of what a state held without closing the connection (an attempt nobody waits for).
        indirect case release(Release)
        /// Let go of `release`, report, then send ``unsentReply`` and drain or close.
        indirect case respond(Response)
        /// Go on sending the answer and dropping the client's input.
        case drain
        /// Let go of `release`, then close the client and forget the connection.
        indirect case close(Release)
    }

    /// An answer to the client and what comes before it.
    struct Response {
        var status: Int
        /// Drain after the answer (otherwise: one write, then close).
        var drain: Bool
        var report: Report
        /// Reported first: the address given as a literal that did not connect.
        var failedAddress: FailedAddress?
        /// The client socket was left watched for writing only; watch it all again.
        var rewatchClient: Bool
        var release: Release
    }

    /// What the monitor hears about an answer.
    enum Report: Equatable {
        /// ``HTTPDNSProxyMonitor/proxyRefused(status:reason:)``: refused before any target was chosen.
        case refused(status: Int, reason: String)
        /// ``HTTPDNSProxyMonitor/proxyTunnelFailed(host:port:status:reason:)``.
        case tunnelFailed(host: String, port: UInt16, status: Int, reason: String)
    }

    /// An address that did not connect and why.
    struct FailedAddress {
        var address: HTTPDNSIPAddress
        var error: HTTPTransportError
    }

    /// A tunnel connected: what ``HTTPDNSProxyMonitor/proxyTunnelOpened(host:port:address:attempts:)`` hears.
    struct Opened: Equatable {
        var host: String
        var port: UInt16
        var address: HTTPDNSIPAddress
        var attempts: Int
    }

    /// What a state held that must go when it ends, let go of in this order: the connector told
    /// `.gone`, the upstream socket closed, the tunnel's end reported and its pipes given back.
    struct Release {
        var deliverGone: Deliver?
        var upstream: Upstream?
        var tunnel: EndedTunnel?

        init(deliverGone: Deliver? = nil, upstream: Upstream? = nil, tunnel: EndedTunnel? = nil) {
            self.deliverGone = deliverGone
            self.upstream = upstream
            self.tunnel = tunnel
        }

        /// A connect in flight: its socket, and the connector waiting for it.
        init(attempt: Attempt?) {
            self.upstream = attempt?.upstream
            if case .connector(let deliver) = attempt?.plan.owner { self.deliverGone = deliver }
        }

        /// A relay: its upstream socket and what is left of its pumps.
        init(_ relaying: Relaying) {
            upstream = relaying.upstream
            tunnel = EndedTunnel(relaying)
        }
    }

    /// A relay that ended: what ``HTTPDNSProxyMonitor/proxyTunnelClosed(host:port:bytesToServer:bytesToClient:)``
    /// hears, and the pumps' pipes to give back to the loop.
    struct EndedTunnel {
        var target: ProxyRequestHead.Target
        var bytesToServer: Int64
        var bytesToClient: Int64
        var toServerPipe: (pipe: ProxyPipe, empty: Bool)?
        var toClientPipe: (pipe: ProxyPipe, empty: Bool)?

        init(_ relaying: Relaying) {
            target = relaying.target
            bytesToServer = relaying.toServer.moved
            bytesToClient = relaying.toClient.moved
            toServerPipe = relaying.toServer.spentPipe
            toClientPipe = relaying.toClient.spentPipe
        }
    }
}
