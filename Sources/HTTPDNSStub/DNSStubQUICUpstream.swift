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

/// DNS over QUIC (RFC 9250) to one server: `doq=IP[:PORT]#NAME`, ALPN "doq", the certificate
/// verified for NAME (also the SNI) against the stub's trust, one QUIC connection kept open and
/// reused, each query on a stream of its own (many at once, answered in any order), ID 0 on the wire.
///
/// Built as ``DNSStubTLSUpstream`` is: callers put a query into a ``DNSStubPipeline`` under the lock
/// and wake the upstream's I/O thread, which alone owns the connection (``DNSStubQUICConnection``),
/// polls its UDP socket with the wake-up pipe, runs QUIC's timers and calls each query's completion
/// (outside the lock). The pipeline's ID of a query is its stream's tag: the answer, which carries
/// ID 0, is given that ID back and matched by it and its question. The thread starts with the
/// first query and ends when no query is left and the connection is closed: idle for
/// ``Configuration/idleTimeout`` (QUIC's own idle timeout, RFC 9000 §10.1, is the same), or closed
/// by the server (the next query reconnects).
///
/// A new connection resumes the TLS session of the previous one's newest ticket (RFC 8446 §2.2).
///
/// A connection lost with queries in flight sends them once more on a new one; a second loss, a
/// refused connection or handshake (a certificate not valid for NAME) fails them, and the group's
/// ranking sees the failure and asks the next upstream.
final class DNSStubQUICUpstream: DNSStubUpstream {
    /// Settings, each with its default.
    struct Configuration: Sendable {
        /// The connection is closed after this long without a query. Default 10 s.
        var idleTimeout: Duration = .seconds(10)
        /// Queries in flight on the connection and held in all.
        var pipeline = DNSStubPipeline<DNSStubTLSUpstream.Waiter>.Configuration()
    }

    typealias Waiter = DNSStubTLSUpstream.Waiter

    struct State: Sendable {
        var pipeline: DNSStubPipeline<Waiter>
        /// The I/O thread runs (it sets this false under the lock when it ends).
        var running = false
        /// The query IDs' randomness (see ``DNSStubTLSUpstream/State/generator``).
        var generator = SystemRandomNumberGenerator()
        /// The TLS session of the server's newest ticket: the next connection resumes it (a shorter
        /// handshake; no 0-RTT, queries wait for the handshake to end).
        var session: [UInt8]?
    }

    let server: SocketAddress
    let serverName: String
    let configuration: Configuration
    let trust: DNSStubQUICTrust
    let state: HTTPDNSLock<State>
    /// The wake-up pipe: a byte written to `wakeWrite` ends the I/O thread's poll.
    let wakeRead: Int32
    let wakeWrite: Int32
    let clock = HTTPDNSUptimeClock()

    /// - Throws: `HTTPDNSError` `.invalidConfiguration` when `trust` cannot be loaded, `.transport`
    ///   when the wake-up pipe cannot be made.
    init(server: SocketAddress, serverName: String, trust: HTTPDNSTrust, configuration: Configuration = Configuration()) throws(HTTPDNSError) {
        self.server = server
        self.serverName = serverName
        self.configuration = configuration
        self.trust = try DNSStubQUICTrust(trust)
        state = HTTPDNSLock(State(pipeline: DNSStubPipeline(configuration: configuration.pipeline)))
        (wakeRead, wakeWrite) = try makeWakePipe()
    }

    deinit {
        close(wakeRead)
        close(wakeWrite)
    }

    var name: String { "doq=\(server.description)#\(serverName)" }

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
            thread.name = "httpdns stub doq"
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
