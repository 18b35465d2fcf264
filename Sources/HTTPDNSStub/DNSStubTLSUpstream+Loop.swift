#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import DNSStubCore
import DNSWire
import Foundation
import HTTPDNSCore

extension DNSStubTLSUpstream {
    /// What the I/O thread does next, decided under the lock.
    private enum Next {
        /// No query is left and no connection open: the thread ends.
        case end
        /// Queries wait and no connection is open: make one.
        case connect
        /// Poll as it is.
        case poll
    }

    /// The I/O thread: one connection at a time, polled with the wake-up pipe; deadlines, the idle
    /// close and the thread's end are checked at each turn. Completions are called here, outside
    /// the lock.
    func run() {
        // A write into a connection the server closed raises SIGPIPE (OpenSSL writes with write(2),
        // without MSG_NOSIGNAL): blocked on this thread, it stays pending here and the write fails
        // with EPIPE instead of ending a program that keeps the default action.
        var pipeSignal = sigset_t()
        sigemptyset(&pipeSignal)
        sigaddset(&pipeSignal, SIGPIPE)
        pthread_sigmask(SIG_BLOCK, &pipeSignal, nil)
        var connection: DNSStubTLSConnection?
        /// When the connection was made or last carried an answer.
        var lastReceived = 0.0
        var idleSince: Double?
        var readable = false
        var writable = false
        while true {
            let now = clock.now()
            let expired = state.withLock { $0.pipeline.expire(now: now) }
            fail(expired.waiters, HTTPDNSError(.timedOut, "no answer in time", source: name))
            let connected = connection != nil
            let next = state.withLock { state -> Next in
                if state.pipeline.isEmpty, !connected {
                    state.running = false
                    return .end
                }
                return connected || !state.pipeline.hasUnsent ? .poll : .connect
            }
            switch next {
            case .end:
                return
            case .connect:
                do throws(HTTPDNSError) {
                    connection = try DNSStubTLSConnection(context: context, server: server, serverName: serverName, sessions: sessions)
                    lastReceived = now
                    readable = false
                    writable = false
                } catch {
                    fail(state.withLock { $0.pipeline.failAll() }, named(error))
                    continue
                }
            case .poll:
                break
            }
            if let open = connection {
                do throws(HTTPDNSError) {
                    var messages = try open.advance(readable: readable, writable: writable)
                    if open.phase == .open {
                        let frames = state.withLock { $0.pipeline.takeUnsent(now: now) }
                        if !frames.isEmpty {
                            open.send(frames)
                            messages += try open.advance(readable: false, writable: false)
                        }
                    }
                    if !messages.isEmpty { lastReceived = now }
                    deliver(messages)
                    if let sent = expired.earliestSent, lastReceived < sent {
                        // A query written on it got no answer in its time and nothing else came
                        // since: a connection a NAT forgot or a server that stopped reading never
                        // fails by itself (TCP retries for minutes), so it is replaced.
                        throw HTTPDNSError(.timedOut, "nothing received on the connection since a query timed out on it")
                    }
                } catch {
                    // Lost after the handshake: what it carried goes on the next connection (once).
                    // Never open: the server or its certificate is refused, every query fails.
                    let wasOpen = open.phase == .open
                    let failed = state.withLock { wasOpen ? $0.pipeline.connectionLost() : $0.pipeline.failAll() }
                    fail(failed, named(error))
                    connection = nil
                    idleSince = nil
                    continue
                }
                let idle = state.withLock { $0.pipeline.isEmpty }
                if idle, open.phase != .open {
                    // Every query it was for has timed out or been cancelled: a server that does
                    // not answer the connect or the handshake is not waited for any longer.
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
            let events = waitForEvents(connection, until: wakeTime(now: now, idleSince: idleSince))
            readable = events.readable
            writable = events.writable
        }
    }

    /// When the poll must end at the latest: the next query deadline or the idle close.
    private func wakeTime(now: Double, idleSince: Double?) -> Double {
        var time = state.withLock { $0.pipeline.nextDeadline } ?? now + configuration.idleTimeout.inSeconds
        if let idleSince { time = min(time, idleSince + configuration.idleTimeout.inSeconds) }
        return time
    }

    /// Waits for the wake-up pipe or the connection until `time`; empties the pipe.
    /// - Returns: whether the connection's socket is readable and writable (an error or hang-up
    ///   counts as readable: the read reports it).
    private func waitForEvents(_ connection: DNSStubTLSConnection?, until time: Double) -> (readable: Bool, writable: Bool) {
        var entries = [pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0)]
        if let connection { entries.append(pollfd(fd: connection.fd, events: connection.events, revents: 0)) }
        let milliseconds = Int32(min(max(0, ((time - clock.now()) * 1000).rounded(.up)), 60_000))
        let count = nfds_t(entries.count)
        guard poll(&entries, count, milliseconds) > 0 else { return (false, false) }
        if entries[0].revents != 0 {
            var sink = [UInt8](repeating: 0, count: 256)
            while read(wakeRead, &sink, 256) == 256 {}
        }
        guard entries.count > 1 else { return (false, false) }
        let events = entries[1].revents
        return (events & Int16(POLLIN | POLLERR | POLLHUP) != 0, events & Int16(POLLOUT) != 0)
    }

    /// Hands each answer to the query it matches; one that matches none (a late answer to a
    /// cancelled query, garbage) is dropped, and its query times out if it is never answered.
    private func deliver(_ messages: [[UInt8]]) {
        for bytes in messages {
            guard let decoded = try? DNSMessage(decoding: bytes), let waiter = state.withLock({ $0.pipeline.answer(decoded) }) else { continue }
            var message = decoded
            message.id = 0
            waiter.completion(.success(message))
        }
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
