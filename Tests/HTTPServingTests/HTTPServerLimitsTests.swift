import Foundation
import HTTPDNSCore
import HTTPServing
import HTTPDNSTestSupport
import XCTest

/// Per-connection limits and deadlines: HTTP/2 streams past the limit are answered `503` (not
/// queued), an HTTP/1 request that does not arrive in time is cut and counted, idle connections
/// end at their timeout without being counted as shed, a TLS handshake or PROXY header that stalls
/// ends at the handshake deadline. Driven by nghttp2's clients (`nghttp`,
/// `h2load`), `openssl s_client` and raw sockets.
final class HTTPServerLimitsTests: XCTestCase {
    /// Runs a tool to its end (started with posix_spawn); its exit status and output, both streams.
    static func run(_ executable: String, _ arguments: [String]) throws -> (status: Int32, output: String) {
        try RunningTool.runToEnd(executable, arguments)
    }

    /// Waits until `condition` holds, for at most `seconds`.
    static func wait(seconds: Double, until condition: () -> Bool) {
        let end = Date().addingTimeInterval(seconds)
        while !condition(), Date() < end { usleep(2_000) }
    }

    /// A server whose responder keeps every request until `release()` (and answers at once after);
    /// counts shed events.
    final class HoldingServer: @unchecked Sendable {
        let held = HTTPDNSLock<(holding: Bool, exchanges: [HTTPServer.Exchange])>((true, []))
        /// Shed events as the server reported them: refused streams, deadline cuts.
        let shed = HTTPDNSLock((streams: 0, deadlines: 0))
        var server: HTTPServer!

        init(_ configure: (inout HTTPServer.Configuration) -> Void) throws {
            var configuration = HTTPServer.Configuration()
            configure(&configuration)
            configuration.connectionEvents = { [shed] event in
                switch event {
                case .refusedStream: shed.withLock { $0.streams += 1 }
                case .requestDeadline: shed.withLock { $0.deadlines += 1 }
                default: break
                }
            }
            server = try HTTPServer(configuration: configuration, bodySink: nil) { [held] _, _, exchange in
                let kept = held.withLock { state in
                    if state.holding { state.exchanges.append(exchange) }
                    return state.holding
                }
                if !kept { exchange.respond(.text("answered\n")) }
            }
        }

        var heldCount: Int { held.withLock { $0.exchanges.count } }

        func release() {
            let exchanges = held.withLock { state in
                state.holding = false
                return state.exchanges
            }
            for exchange in exchanges { exchange.respond(.text("answered\n")) }
        }
    }

    func testStreamsPastTheLimitAreAnswered503AtOnceAndTheOthersAreServed() throws {
        let holding = try HoldingServer { $0.limits.maxConcurrentStreams = 4 }
        defer { holding.server.stop() }
        let url = holding.server.baseURL.absoluteString + "/held"
        // nghttp (h2c by prior knowledge) opens 10 streams at once on one connection.
        let result = HTTPDNSLock<(status: Int32, output: String)?>(nil)
        let done = expectation(description: "nghttp finished")
        Thread {
            result.withLock { $0 = try? Self.run("/usr/bin/nghttp", ["-nv", "-m", "10", "-t", "30", url]) }
            done.fulfill()
        }.start()
        // The six streams past the limit are answered while four wait in the responder.
        Self.wait(seconds: 20) { holding.shed.withLock { $0.streams } >= 6 }
        XCTAssertEqual(holding.shed.withLock { $0.streams }, 6)
        XCTAssertEqual(holding.server.refusedStreamCount, 6)
        XCTAssertEqual(holding.heldCount, 4, "only the streams within the limit reach the responder")
        holding.release()
        wait(for: [done], timeout: 30)
        let output = try XCTUnwrap(result.withLock { $0 }).output
        let statuses = output.split(separator: "\n").filter { $0.contains(":status:") }
        XCTAssertEqual(statuses.filter { $0.hasSuffix(" 503") }.count, 6, output)
        XCTAssertEqual(statuses.filter { $0.hasSuffix(" 200") }.count, 4, output)
        XCTAssertEqual(output.components(separatedBy: "retry-after: 1").count - 1, 6, "every refusal says when to come back")
        // The connection and the server go on: a new burst within the limit is answered in full.
        let after = try Self.run("/usr/bin/h2load", ["-n", "8", "-c", "1", "-m", "4", holding.server.baseURL.absoluteString + "/x"])
        XCTAssertTrue(after.output.contains("status codes: 8 2xx, 0 3xx, 0 4xx, 0 5xx"), after.output)
        XCTAssertEqual(holding.server.refusedStreamCount, 6, after.output)
    }

    func testAnHTTP1RequestUnfinishedAtTheDeadlineIsCutWith408AndCounted() throws {
        let holding = try HoldingServer { $0.limits.requestTimeout = .seconds(1) }
        defer { holding.server.stop() }
        let slow = try RawHTTPClient(port: holding.server.port)
        let started = Date()
        slow.send("GET /never-finished HTTP/1.1\r\nHost: t\r\n")
        let response = slow.readResponse(timeout: 10)
        let elapsed = Date().timeIntervalSince(started)
        XCTAssertEqual(response.status, 408)
        XCTAssertTrue(response.body.contains("too long"), response.body)
        XCTAssertTrue(slow.readAll(timeout: 10).closed, "the connection is closed after the 408")
        XCTAssertGreaterThanOrEqual(elapsed, 0.9, "not cut before its deadline")
        Self.wait(seconds: 5) { holding.shed.withLock { $0.deadlines } >= 1 }
        XCTAssertEqual(holding.server.requestDeadlineCount, 1)
        XCTAssertEqual(holding.heldCount, 0)
    }

    func testAnHTTP1RequestUnfinishedOverTLSIsClosedAndCounted() throws {
        let certificates = try TestCertificates()
        defer { certificates.remove() }
        let leaf = try certificates.issue(dnsNames: ["a.test"])
        let holding = try HoldingServer { configuration in
            configuration.tlsCertificatePEM = leaf.certificatePEM
            configuration.tlsKeyPEM = leaf.keyPEM
            configuration.limits.requestTimeout = .seconds(1)
        }
        defer { holding.server.stop() }
        // openssl s_client reads the half head from a FIFO we hold open (never Foundation's Process,
        // whose launch over-reads /proc/self/fd): standard input stays open, so the client never
        // hangs up itself; only the server's deadline can end the connection.
        let fifo = FileManager.default.temporaryDirectory.appendingPathComponent("httpdns-s_client-\(UUID().uuidString)").path
        XCTAssertEqual(mkfifo(fifo, 0o600), 0, String(cString: strerror(errno)))
        defer { unlink(fifo) }
        let input = open(fifo, O_RDWR)
        XCTAssertGreaterThanOrEqual(input, 0)
        defer { close(input) }
        let client = try RunningTool(
            executable: URL(fileURLWithPath: "/usr/bin/openssl"),
            arguments: ["s_client", "-quiet", "-alpn", "http/1.1", "-connect", "127.0.0.1:\(holding.server.port)"], stdin: fifo)
        let head = Array("GET /never-finished HTTP/1.1\r\nHost: a.test\r\n".utf8)
        XCTAssertEqual(head.withUnsafeBytes { write(input, $0.baseAddress, $0.count) }, head.count)
        _ = try client.wait(timeout: .seconds(30))
        let text = String(decoding: client.stdout + client.stderr, as: UTF8.self)
        XCTAssertFalse(text.contains("HTTP/1.1 200"), text)
        XCTAssertEqual(holding.server.requestDeadlineCount, 1, text)
        XCTAssertEqual(holding.heldCount, 0)
    }

    func testIdleConnectionsEndAtTheirTimeoutWithoutCountingAsShed() throws {
        let holding = try HoldingServer { configuration in
            configuration.limits.requestTimeout = .seconds(1)
            configuration.limits.idleTimeout = .seconds(1)
        }
        defer { holding.server.stop() }
        let port = holding.server.port
        // HTTP/1 that sends nothing, and HTTP/1 idle after one answered request.
        let silent = try RawHTTPClient(port: port)
        let keptAlive = try RawHTTPClient(port: port)
        keptAlive.send("GET /one HTTP/1.1\r\nHost: t\r\n\r\n")
        Self.wait(seconds: 10) { holding.heldCount == 1 }
        holding.release()
        XCTAssertEqual(keptAlive.readResponse(timeout: 10).status, 200)
        // HTTP/2 by prior knowledge: the preface and an empty SETTINGS frame, then silence.
        let h2 = try RawHTTPClient(port: port)
        h2.send("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\u{0}\u{0}\u{0}\u{4}\u{0}\u{0}\u{0}\u{0}\u{0}")
        let started = Date()
        let silentEnd = silent.readAll(timeout: 10)
        XCTAssertTrue(silentEnd.closed, "a silent connection ends at the request timeout")
        XCTAssertTrue(silentEnd.data.isEmpty, "with nothing begun there is nothing to answer")
        XCTAssertTrue(keptAlive.readAll(timeout: 10).closed, "an idle keep-alive connection ends at the request timeout")
        let h2End = h2.readAll(timeout: 10)
        XCTAssertTrue(h2End.closed, "an idle HTTP/2 connection ends at the idle timeout")
        XCTAssertFalse(h2End.data.isEmpty, "after the server's SETTINGS and GOAWAY")
        XCTAssertGreaterThanOrEqual(Date().timeIntervalSince(started), 0.5)
        Self.wait(seconds: 5) { holding.server.openConnectionCount == 0 }
        XCTAssertEqual(holding.server.openConnectionCount, 0)
        XCTAssertEqual(holding.server.requestDeadlineCount, 0, "idle is not shed")
        XCTAssertEqual(holding.server.refusedStreamCount, 0)
    }

    func testStalledTLSHandshakesAndPROXYHeadersEndAtTheHandshakeDeadline() throws {
        let certificates = try TestCertificates()
        defer { certificates.remove() }
        // Only 127.0.0.1 is a balancer that must send a PROXY header; 127.0.0.2 is a direct client.
        var configuration = HTTPServerProtocolTests.plainAndTLSWithPROXY(try certificates.issue(dnsNames: ["a.test"]))
        configuration.limits.handshakeTimeout = .seconds(1)
        configuration.limits.requestTimeout = .seconds(30)  // so that only the handshake deadline can cut
        let server = try HTTPServer(configuration: configuration) { _ in .text("answered\n") }
        defer { server.stop() }
        let started = Date()
        // A TLS client that says nothing, one that stops inside its ClientHello record (5-byte record
        // header announcing 512 bytes, then 3 of them), and a balancer that stops inside its PROXY line.
        let silent = try RawHTTPClient(port: server.ports[1], source: "127.0.0.2")
        let halfHello = try RawHTTPClient(port: server.ports[1], source: "127.0.0.2")
        XCTAssertTrue(halfHello.send("\u{16}\u{3}\u{1}\u{2}\u{0}\u{1}\u{0}\u{1}"))
        let halfProxy = try RawHTTPClient(port: server.ports[0], source: "127.0.0.1")
        XCTAssertTrue(halfProxy.send("PROXY TCP4 203.0.113.7 "))
        // Meanwhile a direct client is answered at once.
        let direct = try RawHTTPClient(port: server.ports[0], source: "127.0.0.2")
        direct.send("GET / HTTP/1.1\r\nHost: t\r\n\r\n")
        XCTAssertEqual(direct.readResponse(timeout: 5).body, "answered\n")
        for (name, client) in [("silent TLS client", silent), ("half a ClientHello", halfHello), ("half a PROXY header", halfProxy)] {
            let end = client.readAll(timeout: 8)
            XCTAssertTrue(end.closed, "\(name): not closed at the handshake deadline")
        }
        let elapsed = Date().timeIntervalSince(started)
        XCTAssertGreaterThanOrEqual(elapsed, 0.9, "not cut before the deadline")
        XCTAssertLessThan(elapsed, 8, "cut by the handshake deadline, not the request timeout")
        Self.wait(seconds: 5) { server.openConnectionCount <= 1 }
        XCTAssertLessThanOrEqual(server.openConnectionCount, 1, "only the direct keep-alive client may stay")
    }
}
