import Foundation
import HTTPDNSCore
import HTTPServing
import Synchronization

/// A loopback ``HTTPServer`` with a few fixed routes that tests of HTTP clients need, recording
/// every request it handles.
///
/// Routes (anything else echoes):
/// - `/bytes?n=N`: N bytes of `x` with `Content-Length`;
/// - `/chunked?n=N`: N bytes of `y` with chunked encoding;
/// - `/sleep?ms=N`: waits N ms (at most 10 s), then answers `slept`;
/// - `/endless?chunk=N&delayms=M`: chunks of N bytes every M ms until the client goes away
///   (``endlessChunksSent`` counts them);
/// - `/redirect`: `302` to `/echo`;
/// - `/echo` and every other path: `200`, the request body back, with `X-Echo-Method`, `X-Echo-Host`,
///   `X-Echo-Query` and `X-Server-Address` headers and every request header as `X-Echo-<name>`.
package final class TestHTTPServer: Sendable {
    /// The server itself.
    package let server: HTTPServer
    private let state: State

    /// What the handler shares with the test. An `NSLock` rather than `Mutex`: ThreadSanitizer on
    /// Linux does not see `Mutex`'s futex waits and would report false races between connections.
    private final class State: @unchecked Sendable {
        private let lock = NSLock()
        private var requests: [HTTPServer.Request] = []
        let endless = Atomic<Int>(0)

        func record(_ request: HTTPServer.Request) { lock.withLock { requests.append(request) } }
        var recorded: [HTTPServer.Request] { lock.withLock { requests } }
    }

    /// Starts on `address` (`port` 0 picks one); with `tls` it serves HTTPS with that leaf.
    package init(address: String = "127.0.0.1", port: Int = 0, tls: TestCertificates.Leaf? = nil) throws {
        guard let ip = HTTPDNSIPAddress(address) else { throw HTTPServer.StartError("bad address \(address)") }
        var configuration = HTTPServer.Configuration(address: ip, port: port)
        configuration.tlsCertificatePEM = tls?.certificatePEM
        configuration.tlsKeyPEM = tls?.keyPEM
        // A test origin on loopback: its stop need not wait the drain's 1 s quiet period (a second
        // per test at teardown; nothing is in flight from a client that has finished).
        configuration.limits.drainQuietPeriod = .milliseconds(50)
        let state = State()
        self.state = state
        self.server = try HTTPServer(configuration: configuration) { request in
            state.record(request)
            return TestHTTPServer.route(request, address: ip, state: state)
        }
    }

    /// The bound port.
    package var port: Int { server.port }
    /// Every request handled so far, in order.
    package var requests: [HTTPServer.Request] { state.recorded }
    /// Chunks the `/endless` route has produced so far.
    package var endlessChunksSent: Int { state.endless.load(ordering: .relaxed) }

    /// Stops the server.
    package func stop() { server.stop() }

    private static func route(_ request: HTTPServer.Request, address: HTTPDNSIPAddress, state: State) -> HTTPServer.Response {
        let number = { (name: String) in request.queryValue(name).flatMap(Int.init) ?? 0 }
        switch request.path {
        case "/bytes":
            return HTTPServer.Response(body: Data(repeating: UInt8(ascii: "x"), count: min(number("n"), 1 << 26)))
        case "/chunked":
            let left = HTTPDNSLock(min(number("n"), 1 << 26))
            return HTTPServer.Response(streamLength: nil) {
                left.withLock { left -> Data? in
                    guard left > 0 else { return nil }
                    let count = min(left, 8192)
                    left -= count
                    return Data(repeating: UInt8(ascii: "y"), count: count)
                }
            }
        case "/sleep":
            usleep(UInt32(min(max(number("ms"), 0), 10_000)) * 1000)
            return .text("slept")
        case "/endless":
            let chunk = max(1, min(number("chunk"), 65536))
            let delay = UInt32(min(max(number("delayms"), 0), 1000))
            return HTTPServer.Response(streamLength: nil) {
                if delay > 0 { usleep(delay * 1000) }
                state.endless.add(1, ordering: .relaxed)
                return Data(repeating: UInt8(ascii: "z"), count: chunk)
            }
        case "/redirect":
            return HTTPServer.Response(status: 302, headers: [HTTPServer.Header(name: "Location", value: "/echo")])
        default:
            var headers = [
                HTTPServer.Header(name: "X-Echo-Method", value: request.method),
                HTTPServer.Header(name: "X-Echo-Host", value: request.header("Host") ?? ""),
                HTTPServer.Header(name: "X-Echo-Query", value: request.rawQuery ?? ""),
                HTTPServer.Header(name: "X-Server-Address", value: address.description),
            ]
            headers += request.headers.map { HTTPServer.Header(name: "X-Echo-\($0.name)", value: $0.value) }
            return HTTPServer.Response(headers: headers, body: request.body)
        }
    }
}
