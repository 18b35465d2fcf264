#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import DNSStubCore
import DNSWire
import Foundation
import HTTPDNSCore

extension DNSStubQUICUpstream {
    /// The I/O thread: one QUIC connection at a time, polled with the wake-up pipe; deadlines,
    /// QUIC's timers, the idle close and the thread's end are checked at each turn. Completions are
    /// called here, outside the lock.
    func run() {
        var connection: DNSStubQUICConnection?
        /// When the connection was made or last carried an answer.
        var lastReceived = 0.0
        var idleSince: Double?
        var readable = false
        while true {
            let now = clock.now()
            let expired = state.withLock { $0.pipeline.expire(now: now) }
            fail(expired.waiters, HTTPDNSError(.timedOut, "no answer in time", source: name))
            let connected = connection != nil
            let ended = state.withLock { state -> Bool in
                guard state.pipeline.isEmpty, !connected else { return false }
                state.running = false
                return true
            }
            if ended { return }
            if connection == nil, state.withLock({ $0.pipeline.hasUnsent }) {
                do throws(HTTPDNSError) {
                    let session = state.withLock { $0.session }
                    connection = try DNSStubQUICConnection(
                        trust: trust, server: server, serverName: serverName, idleTimeout: configuration.idleTimeout, session: session)
                    lastReceived = now
                    readable = false
                } catch {
                    fail(state.withLock { $0.pipeline.failAll() }, named(error))
                    continue
                }
            }
            if let open = connection {
                // Queries go to the connection at once: it holds them until the handshake is done
                // and the server grants streams.
                let frames = state.withLock { $0.pipeline.takeUnsent(now: now) }
                if !frames.isEmpty { open.send(frames: frames) }
                let outcomes = open.advance(readable: readable)
                if let session = open.takeSession() { state.withLock { $0.session = session } }
                if !outcomes.isEmpty { lastReceived = now }
                deliver(outcomes, on: open)
                var failure = open.failure
                if failure == nil, let sent = expired.earliestSent, lastReceived < sent {
                    // A query sent on it got no answer in its time and nothing else came since: a
                    // server that stopped answering is replaced rather than waited on.
                    failure = HTTPDNSError(.timedOut, "nothing received on the connection since a query timed out on it")
                }
                if let failure {
                    // Lost after the handshake: what it carried goes on the next connection (once).
                    // Never open: the server or its certificate is refused, every query fails.
                    let failed = state.withLock { open.wasOpen ? $0.pipeline.connectionLost() : $0.pipeline.failAll() }
                    fail(failed, named(failure))
                    connection = nil
                    idleSince = nil
                    continue
                }
                let idle = state.withLock { $0.pipeline.isEmpty }
                if idle, !open.wasOpen {
                    // Every query it was for has timed out or been cancelled: a server that does
                    // not answer the handshake is not waited for any longer.
                    connection = nil
                    continue
                }
                if idle {
                    let since = idleSince ?? now
                    idleSince = since
                    if now - since >= configuration.idleTimeout.inSeconds {
                        connection = nil
                        idleSince = nil
                        continue
                    }
                } else {
                    idleSince = nil
                }
            }
            readable = waitForEvents(connection, until: wakeTime(now: now, idleSince: idleSince))
        }
    }

    /// When the poll must end at the latest: the next query deadline or the idle close.
    private func wakeTime(now: Double, idleSince: Double?) -> Double {
        var time = state.withLock { $0.pipeline.nextDeadline } ?? now + configuration.idleTimeout.inSeconds
        if let idleSince { time = min(time, idleSince + configuration.idleTimeout.inSeconds) }
        return time
    }

    /// Waits for the wake-up pipe, the connection's socket or its next QUIC timer, until `time` at
    /// the latest; empties the pipe.
    /// - Returns: whether the connection's socket is readable (an error counts: the read reports it).
    private func waitForEvents(_ connection: DNSStubQUICConnection?, until time: Double) -> Bool {
        var entries = [pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0)]
        var milliseconds = Int32(min(max(0, ((time - clock.now()) * 1000).rounded(.up)), 60_000))
        if let connection {
            entries.append(pollfd(fd: connection.fd, events: Int16(POLLIN), revents: 0))
            milliseconds = min(milliseconds, connection.timeoutMilliseconds)
        }
        let count = nfds_t(entries.count)
        guard poll(&entries, count, milliseconds) > 0 else { return false }
        if entries[0].revents != 0 {
            var sink = [UInt8](repeating: 0, count: 256)
            while read(wakeRead, &sink, 256) == 256 {}
        }
        guard entries.count > 1 else { return false }
        return entries[1].revents & Int16(POLLIN | POLLERR | POLLHUP) != 0
    }

    /// Hands each answer to its query: the stream's tag names the query's ID in the pipeline, given
    /// back to the answer (ID 0 on the wire) to match it with its question. A stream is its query's
    /// alone, so a failed stream, or one that carried no DNS answer to that question, fails its
    /// query at once; the outcome of a stream whose query was cancelled (its ID maybe given to
    /// another since) is dropped.
    private func deliver(_ outcomes: [DNSStubQUICConnection.Outcome], on connection: DNSStubQUICConnection) {
        for outcome in outcomes {
            guard let id = connection.queryID(ofStream: outcome.tag) else { continue }
            guard let bytes = outcome.answer else {
                failSent(id, HTTPDNSError(.transport, "the query's stream failed: reset by the server, or ended without a whole DNS message", source: name))
                continue
            }
            guard var decoded = try? DNSMessage(decoding: bytes) else {
                failSent(id, HTTPDNSError.malformed("the query's stream carried no DNS message", source: name))
                continue
            }
            decoded.id = id
            guard let waiter = state.withLock({ $0.pipeline.answer(decoded) }) else {
                failSent(id, HTTPDNSError.malformed("the answer on the query's stream does not match its question", source: name))
                continue
            }
            decoded.id = 0
            waiter.completion(.success(decoded))
        }
    }

    /// Fails the sent query `id` (when it is still held) with `error`.
    private func failSent(_ id: UInt16, _ error: HTTPDNSError) {
        state.withLock { $0.pipeline.failSent(id: id) }?.completion(.failure(error))
    }

    private func fail(_ waiters: [Waiter], _ error: HTTPDNSError) {
        for waiter in waiters { waiter.completion(.failure(error)) }
    }

    /// `error` with this upstream as its source.
    private func named(_ error: HTTPDNSError) -> HTTPDNSError {
        var error = error
        error.source = name
        return error
    }
}
