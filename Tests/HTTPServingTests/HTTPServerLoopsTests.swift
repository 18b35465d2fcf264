import Foundation
import HTTPDNSCore
import HTTPServing
import HTTPDNSTestSupport
import XCTest

/// Several loop threads: connections are spread over them, requests are answered on the loop that
/// holds their connection (at once on it, or later from other threads), and limits stay global.
final class HTTPServerLoopsTests: XCTestCase {
    func testConnectionsAreSpreadOverTheLoops() throws {
        var configuration = HTTPServer.Configuration()
        configuration.threads = 3
        let threads = HTTPDNSLock<[UInt: Int]>([:])
        let server = try HTTPServer(configuration: configuration, bodySink: nil) { _, _, exchange in
            threads.withLock { $0[UInt(pthread_self()), default: 0] += 1 }
            exchange.respond(.text("ok"))
        }
        defer { server.stop() }
        let clients = try (0..<6).map { _ in try RawHTTPClient(port: server.port) }
        // Every connection is held open while the others arrive, so the loops share them evenly.
        for client in clients { client.send("GET / HTTP/1.1\r\nHost: t\r\n\r\n") }
        for client in clients { XCTAssertEqual(client.readResponse(timeout: 10).status, 200) }
        XCTAssertEqual(threads.withLock { $0.values.sorted() }, [2, 2, 2], "three loops, two connections each")
        XCTAssertEqual(server.openConnectionCount, 6)
    }

    func testManyConnectionsOnFourLoopsAreAllAnsweredAtOnceOrLater() throws {
        var configuration = HTTPServer.Configuration()
        configuration.threads = 4
        let later = DispatchQueue(label: "later", attributes: .concurrent)
        let server = try HTTPServer(configuration: configuration, bodySink: nil) { request, _, exchange in
            // Half at once on the loop, half from another thread through the loop's queue.
            if request.path.hasSuffix("later") {
                later.async { exchange.respond(.text("later")) }
            } else {
                exchange.respond(.text("now"))
            }
        }
        defer { server.stop() }
        for path in ["/now", "/later"] {
            for http1 in [false, true] {
                let result = try HTTPServerLimitsTests.run(
                    "/usr/bin/h2load", ["-n", "2000", "-c", "16", "-m", http1 ? "1" : "8"] + (http1 ? ["--h1"] : [])
                        + [server.baseURL.absoluteString + path])
                XCTAssertTrue(result.output.contains("status codes: 2000 2xx"), "\(path) h1 \(http1): \(result.output)")
            }
        }
        XCTAssertEqual(server.requestCount, 8_000)
        XCTAssertEqual(server.inFlightRequestCount, 0)
    }

    func testTheConnectionLimitIsGlobalAcrossLoops() throws {
        var configuration = HTTPServer.Configuration()
        configuration.threads = 2
        configuration.limits.maxConnections = 3
        let server = try HTTPServer(configuration: configuration, bodySink: nil) { _, _, exchange in
            exchange.respond(.text("ok"))
        }
        defer { server.stop() }
        let held = try (0..<3).map { _ in try RawHTTPClient(port: server.port) }
        for client in held { client.send("GET / HTTP/1.1\r\nHost: t\r\n\r\n") }
        for client in held { XCTAssertEqual(client.readResponse(timeout: 10).status, 200) }
        let fourth = try RawHTTPClient(port: server.port)
        fourth.send("GET / HTTP/1.1\r\nHost: t\r\n\r\n")
        XCTAssertEqual(fourth.readResponse(timeout: 10).status, 503)
        XCTAssertEqual(server.refusedConnectionCount, 1)
    }
}
