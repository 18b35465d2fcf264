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
/// When the proxy drains (``proxyDraining(now:unread:)``), a connection with nothing in flight closes at
/// once and any other is marked ``stopping``: it goes on through the states above and closes when
/// its exchange is over (see `ProxyConnectionStateMachine+Drain.swift`).
///
/// Authorising is part of the step from `readingHead` to `connecting`: the head, the credential, the
/// target policy and the fast path's cache look happen in one turn of the loop, with no event between.
///
/// The relay's two ``ProxyPump``s are values in the `relaying` state; the machine sets what the edges
/// said on them and reads how a run left them, while only the connection runs them (the tests set
/// their outcomes by hand).
///
/// Built for the relay's hot path (measured against the class this replaced): not generic over the
/// pump (a generic state is copied through run-time type metadata); the `connecting` and `relaying`
/// states live in boxes changed in place, so that an event neither copies two pumps out of the enum
/// and back nor copies a 200-byte state to look at it; actions that carry much (an answer, what a
/// close lets go of) are `indirect`, being rare or once per connection; and one call per socket event
/// both runs the pumps and decides. Not copyable: one connection owns one machine, and its boxes are
/// nobody else's.
struct ProxyConnectionStateMachine: ~Copyable {
    /// Hears how a connector's attempt ended (it resumes the connector task).
    typealias Deliver = (ProxyConnector.AttemptResult) -> Void

    enum State {
        case readingHead(ReadingHead)
        case connecting(ConnectingBox)
        case relaying(RelayingBox)
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

    /// Where the connecting state lives: a box, changed in place, so that the state enum stays small
    /// (this is its largest state) and a relay event's look at it copies a reference, not 200 bytes.
    final class ConnectingBox {
        var connecting: Connecting

        init(_ connecting: Connecting) {
            self.connecting = connecting
        }
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

    /// Where the relaying state lives: a box, so that each event of a relay changes the pumps where
    /// they are, in one access, instead of moving two 120-byte pumps out of the enum and back. The
    /// machine cannot be copied, so nothing else ever shares the box.
    final class RelayingBox {
        var relaying: Relaying

        init(_ relaying: Relaying) {
            self.relaying = relaying
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
    /// The proxy drains: this connection closes as soon as it has nothing in flight (see
    /// ``proxyDraining(now:unread:)``). Set there once, never cleared.
    var stopping = false
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
        if case .connecting(let box) = state { return box.connecting.attempt != nil }
        return false
    }

    var isClosed: Bool {
        if case .closed = state { return true }
        return false
    }

    /// The state moved out, `.modifying` left in its place until the caller stores a state again.
    /// Matching the moved value takes its associated value without a copy, and its buffers stay
    /// unshared while they change (`case .readingHead(var reading) = state` would copy the head's
    /// bytes and make the next append copy them again).
    mutating func take() -> State {
        var taken = State.modifying
        swap(&taken, &state)
        return taken
    }
}
