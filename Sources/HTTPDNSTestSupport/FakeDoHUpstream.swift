import DNSWire
import Dispatch
import Foundation
import HTTPDNSCore
import HTTPServing

/// A loopback DNS-over-HTTPS server (RFC 8484 POST, `application/dns-message`) that answers every
/// question with a canned record (A 127.0.0.1, AAAA ::1, NODATA for other types, TTL 300), late
/// by ``delay`` and not at all for a share of requests (``dropRate``), to test how a client chooses
/// among upstreams. This kernel has no netem: the misbehaviour is the server's.
///
/// A dropped request is answered `503` after ``dropHold`` (so that no request stays open for
/// ever), long after any client gave up on it. Drops are deterministic: with rate 0.2, every fifth
/// request. Nothing blocks a thread: late answers are scheduled on a dispatch queue.
package final class FakeDoHUpstream: Sendable {
    private struct State {
        var delay: Duration = .zero
        var dropRate: Double = 0
        var dropHold: Duration = .seconds(3)
        var requests = 0
        var dropped = 0
    }

    package let server: HTTPServer
    private let state = HTTPDNSLock(State())

    /// Starts on 127.0.0.1 and a free port.
    package init() throws {
        var configuration = HTTPServer.Configuration(address: HTTPDNSIPAddress("127.0.0.1")!, port: 0)
        configuration.threads = 1
        configuration.limits.drainQuietPeriod = .milliseconds(50)
        let state = self.state
        let queue = DispatchQueue(label: "fake doh upstream", attributes: .concurrent)
        server = try HTTPServer(configuration: configuration, bodySink: nil) { request, _, exchange in
            let (delay, drop, hold) = state.withLock { state -> (Duration, Bool, Duration) in
                let index = state.requests
                state.requests += 1
                let drop = (Double(index + 1) * state.dropRate).rounded(.down) > (Double(index) * state.dropRate).rounded(.down)
                if drop { state.dropped += 1 }
                return (state.delay, drop, state.dropHold)
            }
            let response = drop ? HTTPServer.Response.text("dropped\n", status: 503) : Self.answer(request)
            let wait = drop ? hold : delay
            if wait == .zero {
                exchange.respond(response)
            } else {
                let nanoseconds = Int(wait.components.seconds) * 1_000_000_000 + Int(wait.components.attoseconds / 1_000_000_000)
                queue.asyncAfter(deadline: .now() + .nanoseconds(nanoseconds)) { exchange.respond(response) }
            }
        }
    }

    /// `http://127.0.0.1:PORT/dns-query`.
    package var url: String { "http://127.0.0.1:\(server.port)/dns-query" }

    /// How late every answer is. Default none.
    package var delay: Duration {
        get { state.withLock { $0.delay } }
        set { state.withLock { $0.delay = newValue } }
    }

    /// Share of requests not answered, 0…1. Default 0.
    package var dropRate: Double {
        get { state.withLock { $0.dropRate } }
        set { state.withLock { $0.dropRate = newValue } }
    }

    /// Requests received, and how many of them were dropped.
    package var counts: (requests: Int, dropped: Int) { state.withLock { ($0.requests, $0.dropped) } }

    package func stop() { server.stop(drain: .milliseconds(100)) }

    /// The RFC 8484 answer to a POSTed query, or `400` when the request is not one.
    private static func answer(_ request: HTTPServer.Request) -> HTTPServer.Response {
        guard request.method == "POST", let query = try? DNSMessage(decoding: [UInt8](request.body)), query.questions.count == 1 else {
            return .text("not a DNS query\n", status: 400)
        }
        var message = DNSMessage.response(to: query)
        let question = query.questions[0]
        switch question.type {
        case .A: message.answers = [DNSRecord(name: question.name, ttl: 300, data: .a([127, 0, 0, 1]))]
        case .AAAA: message.answers = [DNSRecord(name: question.name, ttl: 300, data: .aaaa([UInt8](repeating: 0, count: 15) + [1]))]
        default: break
        }
        guard let bytes = try? message.encode() else { return .text("cannot encode\n", status: 500) }
        return HTTPServer.Response(headers: [HTTPServer.Header(name: "Content-Type", value: "application/dns-message")], body: Data(bytes))
    }
}
