import HTTPDNSCore
import HTTPDNSTransport

/// The life of one proxied client connection as a value: the connection's state and every decision,
/// with no socket in it (style rule 17).
///
/// Each method takes an event — bytes of the request head read, the head complete, an edge from the
/// client or the upstream, a connect attempt started, connected or failed, the connector out of
/// addresses, the pumps run, a deadline scan, the client gone, the proxy stopping — and returns the
/// ``Action`` for ``ProxyConnection`` to perform (connect, start the connector, relay, answer and
/// drain, close …). The connection keeps only the I/O: the sockets, their epoll registrations and the
/// pumps' calls. Whatever exists in one state only (the head's bytes, the attempt's socket, the
/// pumps, the answer being sent) lives in that state's associated value, so no field has to be set
/// "by now".
///
/// ```
/// readingHead ─┬─ head complete, credential and target allowed ─→ connecting
///              └─ bad head, wrong credential, forbidden target, head deadline ─→ draining
/// connecting ──┬─ attempt connected ─→ relaying
///              ├─ fast path's attempt failed (a name) ─→ connecting (the connector takes over)
///              └─ a literal's attempt failed, connector out of addresses ─→ draining
/// relaying ────┬─ both directions over, a pump failed, idle deadline ─→ closed
///              └─ unreadable response before any byte went to the client ─→ draining (502)
/// draining ──── client's end or drain deadline ─→ closed
/// any ───────── client gone, proxy stopped ─→ closed
/// ```
///
/// Authorising is part of the step from `readingHead` to `connecting`: the head, the credential, the
/// target policy and the fast path's cache look happen in one turn of the loop, with no event between.
///
/// The relay's two ``ProxyPump``s are values in the `relaying` state; the machine sets what the edges
/// said on them and reads how a run left them, while only the connection runs them (the tests set
/// their outcomes by hand). Not generic over the pump on purpose: a generic state's copies go
/// through run-time type metadata, on every event of the hot path.
struct ProxyConnectionStateMachine {
    /// Hears how a connector's attempt ended (it resumes the connector task).
    typealias Deliver = (ProxyConnector.AttemptResult) -> Void

    enum State {
        case readingHead(ReadingHead)
        case connecting(Connecting)
        case relaying(Relaying)
        /// An answer (a refusal or a failure) going out, then what the client sends is read and dropped.
        case draining(Draining)
        case closed
        /// Only while a method changes an associated value in place (see ``take()``).
        case modifying
    }

    /// Reading the request head since `acceptedAt`.
    struct ReadingHead {
        var acceptedAt: UInt64
        /// An incomplete head read so far (empty in the usual case, a whole head in one read).
        var buffered: [UInt8] = []
        var client = Readiness()
    }

    /// Choosing and connecting the upstream.
    struct Connecting {
        var request: Request
        var acceptedAt: UInt64
        var client: Readiness
        /// The connect in flight; nil while the connector task chooses its next address.
        var attempt: Attempt?
    }

    /// Moving bytes both ways.
    struct Relaying {
        var target: ProxyRequestHead.Target
        var upstream: Upstream
        var toServer: ProxyPump
        var toClient: ProxyPump
        var lastActivity: UInt64
        var clientInterest = Interest.all
        var upstreamInterest = Interest.all

        var forwarding: Bool {
            if case .forward = target { return true }
            return false
        }
    }

    /// Sending `reply` (`sent` bytes of it so far), then dropping input until `deadline`.
    struct Draining {
        var reply: [UInt8]
        var sent = 0
        var deadline: UInt64
    }

    /// A complete, authorised request head.
    struct Request {
        var head: ProxyRequestHead
        /// Bytes read after the head: the tunnel's first bytes or the forwarded request's body.
        var leftover: [UInt8]
        /// The target given as an IP literal, if it was.
        var literal: HTTPDNSIPAddress?

        var target: ProxyRequestHead.Target { head.target }
    }

    /// What a socket's edges said before a pump exists to keep it.
    struct Readiness: Equatable {
        var readable = false
        var hungUp = false
    }

    /// An upstream socket and its token in the loop's epoll set (0 when the kernel refused it).
    struct Upstream: Equatable {
        var socket: Int32
        var token: UInt64
    }

    /// What a socket is watched for: everything, or only writability while its bytes wait for the
    /// other side (see ``ProxyLoop/writeOnlyEvents``).
    enum Interest: Equatable {
        case all
        case writeOnly
    }

    /// What one epoll event said about a socket.
    struct Edges: Equatable {
        /// Bytes or the end may be read (readable, the peer closed, hang-up or error).
        var readable = false
        /// The socket may take bytes (writable, hang-up or error).
        var writable = false
        /// The peer closed its side (peer closed, hang-up or error).
        var hungUp = false
        /// The socket failed (hang-up or error): a connect was refused, a client vanished.
        var failed = false
    }

    /// One connect to make: chosen here (fast path) or by the connector; the connection starts it
    /// and passes the plan back with ``attemptStarted(_:_:now:)``.
    struct AttemptPlan {
        var address: HTTPDNSIPAddress
        var port: UInt16
        /// 1 for the first address tried.
        var number: Int
        var deadline: UInt64
        var owner: Owner
    }

    /// Who chose an attempt, and so who hears how it ended.
    enum Owner {
        /// The connection itself: an IP literal or a fresh cached answer, without a task.
        case fastPath
        /// The connector task, waiting for the result.
        case connector(Deliver)
    }

    /// A connect in flight.
    struct Attempt {
        var plan: AttemptPlan
        var upstream: Upstream
        var readiness = Readiness()
    }

    /// How a connect started, as the connection saw it.
    enum ConnectStart {
        case inProgress(Upstream)
        case connected(Upstream)
        /// No connect: `socket` is one to close (it was made, but the loop could not watch it).
        case failed(HTTPTransportError.Code, String, socket: Upstream?)
    }

    /// Changed only by the methods below and in this type's extensions (one file per concern).
    var state: State
    /// The client's socket (the pumps' one end).
    let client: Int32
    let rules: ProxyConnectionRules

    init(client: Int32, acceptedAt now: UInt64, rules: ProxyConnectionRules) {
        state = .readingHead(ReadingHead(acceptedAt: now))
        self.client = client
        self.rules = rules
    }

    var isConnecting: Bool {
        if case .connecting = state { return true }
        return false
    }

    /// Connecting with an attempt in flight.
    var isAttempting: Bool {
        if case .connecting(let connecting) = state { return connecting.attempt != nil }
        return false
    }

    var isClosed: Bool {
        if case .closed = state { return true }
        return false
    }

    // MARK: - Socket events

    /// An edge from the client socket.
    mutating func clientEvent(_ edges: Edges) -> Action {
        // The hot states first, by their tag alone: nothing is moved or copied for them here.
        switch state {
        case .relaying:
            return .relay(client: edges, upstream: Edges())
        case .draining:
            return .drain
        case .closed:
            return .none
        case .modifying:
            preconditionFailure("client event while the state machine modifies its state")
        case .readingHead, .connecting:
            break
        }
        switch take() {
        case .readingHead(var reading):
            if edges.readable { reading.client.readable = true }
            if edges.hungUp { reading.client.hungUp = true }
            state = .readingHead(reading)
            return .readHead
        case .connecting(var connecting):
            // Nothing is read while connecting; only a failed or vanished client matters.
            if edges.readable { connecting.client.readable = true }
            if edges.hungUp { connecting.client.hungUp = true }
            state = .connecting(connecting)
            return edges.failed ? closeAll() : .none
        case let other:
            state = other
            return .none
        }
    }

    /// An edge from the upstream socket (the attempt's while connecting).
    mutating func upstreamEvent(_ edges: Edges, now: UInt64) -> Action {
        switch state {
        case .relaying:
            return .relay(client: Edges(), upstream: edges)
        case .connecting:
            break
        case .modifying:
            preconditionFailure("upstream event while the state machine modifies its state")
        case .readingHead, .draining, .closed:
            return .none
        }
        // Only an attempt in flight hears its socket.
        guard isAttempting, case .connecting(var connecting) = take(), var attempt = connecting.attempt else { return .none }
        if edges.readable { attempt.readiness.readable = true }
        if edges.hungUp { attempt.readiness.hungUp = true }
        // Refused or unreachable: the socket's pending error says which.
        if edges.failed {
            connecting.attempt = attempt
            state = .connecting(connecting)
            return .readConnectError(attempt.upstream.socket)
        }
        // Writable without an error: the handshake is done.
        guard edges.writable else {
            connecting.attempt = attempt
            state = .connecting(connecting)
            return .none
        }
        connecting.attempt = nil
        return connected(attempt, connecting)
    }

    // MARK: - Deadlines

    /// The loop's periodic scan: the request head, the connect attempt, idleness, the drain.
    mutating func checkDeadlines(now: UInt64) -> Action {
        switch state {
        case .readingHead(let reading):
            guard now &- reading.acceptedAt > rules.headTimeout else { return .none }
            let reason = "no complete request head in time"
            return respond(.refused(status: 408, reason: reason), status: 408, reason: reason, drain: false, now: now)
        case .connecting(let connecting):
            guard let attempt = connecting.attempt, now > attempt.plan.deadline else { return .none }
            return attemptFailed(.timedOut, "connect timed out", now: now)
        case .relaying(let relaying):
            return now &- relaying.lastActivity > rules.idleTimeout ? closeAll() : .none
        case .draining(let draining):
            return now > draining.deadline ? closeAll() : .none
        case .closed:
            return .none
        case .modifying:
            preconditionFailure("deadline scan while the state machine modifies its state")
        }
    }

    // MARK: - Closing

    /// The client's socket ended or failed (a read found its end or an error).
    mutating func clientHungUp() -> Action {
        closeAll()
    }

    /// The answer went out in one write, without a drain (the head deadline's 408).
    mutating func replyFlushed() -> Action {
        closeAll()
    }

    /// The proxy stops (or the client could not be watched at all).
    mutating func proxyStopped() -> Action {
        closeAll()
    }

    /// Refused before it was admitted (too many connections): answered and closed by the loop.
    mutating func refusedAtAdmission() {
        state = .closed
    }

    /// The state moved out, `.modifying` left in its place until the caller stores a state again.
    /// Matching the moved value takes its associated value without a copy, and its buffers stay
    /// unshared while they change (`case .relaying(var relaying) = state` would copy both pumps and
    /// make every append to their buffers copy them again).
    mutating func take() -> State {
        var taken = State.modifying
        swap(&taken, &state)
        return taken
    }

    /// Leaves every state for `closed`, with what that state held to let go of.
    mutating func closeAll() -> Action {
        let release: Release
        switch state {
        case .readingHead, .draining:
            release = Release()
        case .connecting(let connecting):
            release = Release(attempt: connecting.attempt)
        case .relaying(let relaying):
            release = Release(relaying)
        case .closed:
            return .none
        case .modifying:
            preconditionFailure("close while the state machine modifies its state")
        }
        state = .closed
        return .close(release)
    }

    /// Moves to `draining` with the answer `status` (`Connection: close`); with `drain`, the client's
    /// input is read and dropped for up to ``ProxyConnectionRules/drainTime``, so that closing does not
    /// reset the connection before the answer is read.
    mutating func respond(
        _ report: Report, status: Int, reason: String, drain: Bool, now: UInt64,
        failedAddress: FailedAddress? = nil, rewatchClient: Bool = false, release: Release = Release()
    ) -> Action {
        let deadline = now + (drain ? ProxyConnectionRules.drainTime : 0)
        state = .draining(Draining(reply: ProxyReply.bytes(status: status, reason: reason), deadline: deadline))
        return .respond(Response(
            status: status, drain: drain, report: report, failedAddress: failedAddress, rewatchClient: rewatchClient,
            release: release))
    }
}
