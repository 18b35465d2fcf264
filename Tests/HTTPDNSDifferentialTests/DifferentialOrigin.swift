import Foundation
import HTTPDNSCore
import HTTPDNSServer
import HTTPDNSTestSupport
import HTTPServing

/// The application server behind nginx: answers the scenarios' paths, hashing every request body
/// as it arrives (a 64 MiB upload is never held).
///
/// - `/echo`: what it saw, as headers (`X-Method`, `X-Host`, `X-Body-Length`, `X-Body-SHA256`,
///   `X-Cookie`, `X-Authorization`) and as a one-line body;
/// - `/bytes?n=N`: N deterministic bytes; `/gzip`: 200 kB of text (nginx compresses it);
/// - `/drip?n=N&ms=M`: N chunks of 1 KiB, M ms apart; `/endless?chunk=N`: chunks until the client leaves;
/// - `/slow?ms=N`: the answer after N ms; `/cookie?v=V`: sets `id=V`;
/// - `/auth`: 401 with a Basic challenge unless `user:password` is sent;
/// - `/cacheable?k=K`: cacheable for 600 s, `X-Hits` counts requests per key.
final class DifferentialOrigin: Sendable {
    let server: HTTPServer
    private let hits = HTTPDNSLock<[String: Int]>([:])

    init() throws {
        let hits = self.hits
        var configuration = HTTPServer.Configuration(address: HTTPDNSIPAddress("127.0.0.1")!, port: 0)
        // nginx holds an upload whole and then sends it here: under ASan, hashing 64 MiB can take
        // longer than the server's 10 s request deadline, and a cut request reads as nginx's 502.
        configuration.limits.requestTimeout = .seconds(300)
        server = try HTTPServer(
            configuration: configuration,
            bodySink: { _ in SHA256BodySink() },
            handler: { request, sink in
                DifferentialOrigin.route(request, sink: sink as? SHA256BodySink, hits: hits)
            })
    }

    var port: Int { server.port }
    func stop() { server.stop() }

    private static func route(_ request: HTTPServer.Request, sink: SHA256BodySink?, hits: HTTPDNSLock<[String: Int]>) -> HTTPServer.Response {
        let number = { (name: String) in request.queryValue(name).flatMap(Int.init) ?? 0 }
        let text = [HTTPServer.Header(name: "Content-Type", value: "text/plain")]
        switch request.path {
        case "/bytes":
            let count = min(number("n"), 64 << 20)
            return HTTPServer.Response(headers: text, body: Data((0..<count).map { UInt8(truncatingIfNeeded: $0 &* 7) }))
        case "/gzip":
            let line = "the quick brown fox jumps over the lazy dog 0123456789\n"
            return HTTPServer.Response(headers: text, body: Data(String(repeating: line, count: 4000).utf8))
        case "/drip":
            let left = HTTPDNSLock(min(number("n"), 10_000))
            let delay = UInt32(min(number("ms"), 1000)) * 1000
            return HTTPServer.Response(headers: text, streamLength: nil) {
                guard left.withLock({ left in defer { left -= 1 }; return left > 0 }) else { return nil }
                usleep(delay)
                return Data(repeating: 0x64, count: 1024)
            }
        case "/endless":
            let chunk = max(1, min(number("chunk"), 65536))
            return HTTPServer.Response(headers: text, streamLength: nil) {
                usleep(2000)
                return Data(repeating: 0x7a, count: chunk)
            }
        case "/slow":
            usleep(UInt32(min(number("ms"), 10_000)) * 1000)
            return HTTPServer.Response(headers: text, body: Data("late\n".utf8))
        case "/auth":
            guard request.header("authorization") == "Basic dXNlcjpwYXNzd29yZA==" else {
                return HTTPServer.Response(
                    status: 401, headers: text + [.init(name: "WWW-Authenticate", value: "Basic realm=\"differential\"")],
                    body: Data("who are you?\n".utf8))
            }
            return HTTPServer.Response(headers: text, body: Data("welcome\n".utf8))
        case "/cacheable":
            let key = request.queryValue("k") ?? ""
            let count = hits.withLock { hits -> Int in
                hits[key, default: 0] += 1
                return hits[key]!
            }
            return HTTPServer.Response(
                headers: text + [.init(name: "Cache-Control", value: "max-age=600"), .init(name: "X-Hits", value: String(count))],
                body: Data("cached body\n".utf8))
        default:
            let length = sink?.byteCount ?? 0
            let hash = sink?.finish() ?? ""
            var headers = text + [
                .init(name: "X-Method", value: request.method),
                .init(name: "X-Host", value: request.header("host") ?? ""),
                .init(name: "X-Body-Length", value: String(length)),
                .init(name: "X-Body-SHA256", value: hash),
                .init(name: "X-Cookie", value: request.header("cookie") ?? "-"),
                .init(name: "X-Authorization", value: request.header("authorization") ?? "-"),
            ]
            if request.path == "/cookie" {
                headers.append(.init(name: "Set-Cookie", value: "id=\(request.queryValue("v") ?? ""); Path=/"))
            }
            let body = "\(request.method) \(request.path) \(length) \(hash)\n"
            return HTTPServer.Response(headers: headers, body: Data(body.utf8))
        }
    }
}
