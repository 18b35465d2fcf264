#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import DNSSockets
import DNSStubCore
import DNSWire
import Foundation
import HTTPDNSCore

/// DNS over TLS (RFC 7858) to one server: `dot=IP[:PORT]#NAME`, the certificate verified for NAME
/// (also the SNI) against the stub's trust, one connection kept open and reused, queries pipelined
/// on it and answered in any order (matched by ID and question, ``DNSStubPipeline``). A new
/// connection resumes the session the server last gave (RFC 7858 §3.4: TLS 1.3 tickets or RFC 5077),
/// so a reconnect after the server's idle close costs no full handshake.
///
/// Which thread owns what: callers only put a query into the pipeline under the lock and wake the
/// upstream's I/O thread; that thread alone owns the connection (``DNSStubTLSConnection``), polls
/// it with its wake-up pipe, writes, reads, and calls each query's completion (outside the lock).
/// One thread polling one connection is how the stub does its other socket I/O too (its UDP and
/// TCP threads): no task or thread hop per query, and the cooperative pool never blocks. The thread
/// starts with the first query and ends when no query is left and the connection is closed: idle
/// for ``Configuration/idleTimeout``, or closed by the server (the next query reconnects).
///
/// A connection that breaks with queries in flight sends them once more on a new one; a second
/// loss, a refused connection or handshake (a certificate not valid for NAME) fails them, and the
/// group's ranking sees the failure and asks the next upstream.
final class DNSStubTLSUpstream: DNSStubUpstream {
    /// Settings, each with its default.
    struct Configuration: Sendable {
        /// The connection is closed after this long without a query. Default 10 s.
        var idleTimeout: Duration = .seconds(10)
        /// Queries in flight on the connection and held in all.
        var pipeline = DNSStubPipeline<Waiter>.Configuration()
    }

    /// A query's caller: its completion, called once.
    struct Waiter: Sendable {
        var completion: @Sendable (Result<DNSMessage, any Error>) -> Void
    }

    struct State: Sendable {
        var pipeline: DNSStubPipeline<Waiter>
        /// The I/O thread runs (it sets this false under the lock when it ends).
        var running = false
        /// The query IDs' randomness. Kept here rather than in a local: ThreadSanitizer's
        /// instrumentation of an `inout` access to an empty struct on the stack crashed the test
        /// process (SEGV in its shadow memory, seen with Swift 6.2).
        var generator = SystemRandomNumberGenerator()
    }

    let server: SocketAddress
    let serverName: String
    let configuration: Configuration
    let context: DNSStubTLSContext
    let state: HTTPDNSLock<State>
    /// The wake-up pipe: a byte written to `wakeWrite` ends the I/O thread's poll.
    let wakeRead: Int32
    let wakeWrite: Int32
    let clock = HTTPDNSUptimeClock()
    /// The session the next connection resumes (the server's newest ticket); only the I/O thread
    /// touches it, through its connections.
    let sessions = DNSStubTLSSessions()

    /// - Throws: `HTTPDNSError` `.invalidConfiguration` when `trust` cannot be loaded, `.transport`
    ///   when the wake-up pipe cannot be made.
    init(server: SocketAddress, serverName: String, trust: HTTPDNSTrust, configuration: Configuration = Configuration()) throws(HTTPDNSError) {
        self.server = server
        self.serverName = serverName
        self.configuration = configuration
        context = try DNSStubTLSContext(trust: trust)
        state = HTTPDNSLock(State(pipeline: DNSStubPipeline(configuration: configuration.pipeline)))
        (wakeRead, wakeWrite) = try makeWakePipe()
    }

    deinit {
        close(wakeRead)
        close(wakeWrite)
    }

    var name: String { "dot=\(server.description)#\(serverName)" }

    func exchange(_ query: DNSMessage, timeout: Duration) async throws -> DNSMessage {
        try await awaitingCallback(query, timeout: timeout)
    }

    /// Puts `query` into the pipeline and wakes the I/O thread (starting it when it is not
    /// running); `completion` is called on that thread, or here when the pipeline is full.
    func exchange(
        _ query: DNSMessage, timeout: Duration, completion: @escaping @Sendable (Result<DNSMessage, any Error>) -> Void
    ) -> DNSStubCancellation {
        guard let wire = try? query.encode() else {
            completion(.failure(HTTPDNSError(.invalidConfiguration, "query cannot be encoded", source: name)))
            return DNSStubCancellation {}
        }
        let deadline = clock.now() + timeout.inSeconds
        let (ticket, start) = state.withLock { state -> (DNSStubPipeline<Waiter>.Ticket?, Bool) in
            let ticket = state.pipeline.enqueue(query, wire: wire, deadline: deadline, waiter: Waiter(completion: completion), using: &state.generator)
            guard ticket != nil, !state.running else { return (ticket, false) }
            state.running = true
            return (ticket, true)
        }
        guard let ticket else {
            completion(.failure(HTTPDNSError(.transport, "too many queries waiting for the connection", source: name)))
            return DNSStubCancellation {}
        }
        if start {
            let thread = Thread { [self] in run() }
            thread.name = "httpdns stub dot"
            thread.start()
        } else {
            wakeUp()
        }
        return DNSStubCancellation { [self] in
            guard let waiter = state.withLock({ $0.pipeline.cancel(ticket) }) else { return }
            waiter.completion(.failure(HTTPDNSError(.cancelled, "exchange cancelled", source: name)))
        }
    }

    /// Ends the I/O thread's poll (a full pipe already does).
    func wakeUp() {
        var byte: UInt8 = 1
        _ = write(wakeWrite, &byte, 1)
    }
}
