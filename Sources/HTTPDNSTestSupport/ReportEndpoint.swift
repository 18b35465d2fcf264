import Foundation
import HTTPDNSCore
import HTTPServing

/// A loopback stand-in for the HTTPDNS service's `POST /report` (issue 22): records every request
/// with its arrival time and answers with a status the test chooses (202 `{"accepted":N}` by default).
package final class ReportEndpoint: Sendable {
    /// One request as received.
    package struct Received: Sendable {
        package var request: HTTPServer.Request
        /// Seconds on a monotonic clock since the endpoint started.
        package var at: Double

        /// The body's `reports` array, each item as a dictionary (empty when the body is not that).
        package var reports: [[String: Any]] {
            guard let object = try? JSONSerialization.jsonObject(with: request.body) as? [String: Any] else { return [] }
            return object["reports"] as? [[String: Any]] ?? []
        }

        /// The header field `name`, case-insensitively.
        package func header(_ name: String) -> String? { request.header(name) }
    }

    /// What the next request is answered with.
    package struct Answer: Sendable {
        package var status: Int
        package var headers: [HTTPServer.Header]

        package init(status: Int, headers: [HTTPServer.Header] = []) {
            self.status = status
            self.headers = headers
        }
    }

    private struct State {
        var received: [Received] = []
        /// Scripted answers, used in order; then 202.
        var script: [Answer] = []
    }

    private let server: HTTPServer
    private let state: HTTPDNSLock<State>
    private let started = ContinuousClock.now

    /// Starts on `address` (port 0 picks one); with `tls` it serves HTTPS with that leaf.
    package init(address: String = "127.0.0.1", tls: TestCertificates.Leaf? = nil) throws {
        guard let ip = HTTPDNSIPAddress(address) else { throw HTTPServer.StartError("bad address \(address)") }
        var configuration = HTTPServer.Configuration(address: ip, port: 0)
        configuration.tlsCertificatePEM = tls?.certificatePEM
        configuration.tlsKeyPEM = tls?.keyPEM
        // A test origin on loopback: its stop need not wait the drain's 1 s quiet period (a second
        // per test at teardown; nothing is in flight from a client that has finished).
        configuration.limits.drainQuietPeriod = .milliseconds(50)
        let state = HTTPDNSLock(State())
        let started = self.started
        self.state = state
        self.server = try HTTPServer(configuration: configuration) { request in
            let at = started.duration(to: .now)
            let seconds = Double(at.components.seconds) + Double(at.components.attoseconds) / 1e18
            let received = Received(request: request, at: seconds)
            let answer = state.withLock { state -> Answer? in
                state.received.append(received)
                return state.script.isEmpty ? nil : state.script.removeFirst()
            }
            guard let answer else {
                return HTTPServer.Response(
                    status: 202, headers: [.init(name: "Content-Type", value: "application/json")],
                    body: Data(#"{"accepted":\#(received.reports.count)}"#.utf8))
            }
            return HTTPServer.Response(status: answer.status, headers: answer.headers, body: Data("{}".utf8))
        }
    }

    /// The bound port.
    package var port: Int { server.port }
    /// `http(s)://ADDRESS:PORT/report`.
    package func url(scheme: String = "http", host: String = "127.0.0.1") -> URL {
        URL(string: "\(scheme)://\(host):\(port)/report")!
    }

    /// Every request so far, in order.
    package var received: [Received] { state.withLock { $0.received } }

    /// Seconds since the endpoint started: the clock of ``Received/at``.
    package var elapsed: Double {
        let at = started.duration(to: .now)
        return Double(at.components.seconds) + Double(at.components.attoseconds) / 1e18
    }
    /// Every report item so far, across requests.
    package var reports: [[String: Any]] { received.flatMap(\.reports) }

    /// Answers the next requests with `answers`, in order (then 202 again).
    package func script(_ answers: [Answer]) {
        state.withLock { $0.script += answers }
    }

    package func stop() { server.stop() }
}
