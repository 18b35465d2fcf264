import Foundation
import HTTPDNSCore
import HTTPServing
import HTTPDNSTestSupport
import XCTest

/// The drain in ``HTTPServer/stop(drain:)``: the listener closes first, a request answered during
/// it says `Connection: close`, an idle keep-alive connection closes once quiet, HTTP/2 hears
/// GOAWAY, and what the drain could not finish is cut at its end and counted.
final class HTTPServerDrainTests: XCTestCase {
    private typealias HoldingServer = HTTPServerLimitsTests.HoldingServer

    /// A request held past the drain is cut at its end and counted; stop returns then, not later.
    func testARequestHeldPastTheDrainIsCutAndCounted() throws {
        let holding = try HoldingServer { $0.threads = 2 }
        let client = try RawHTTPClient(port: holding.server.port)
        client.send("GET /held HTTP/1.1\r\nHost: t\r\n\r\n")
        HTTPServerLimitsTests.wait(seconds: 10) { holding.heldCount == 1 }
        XCTAssertEqual(holding.heldCount, 1)
        let started = ContinuousClock.now
        holding.server.stop(drain: .milliseconds(300))
        let took = ContinuousClock.now - started
        XCTAssertGreaterThanOrEqual(took, .milliseconds(300), "the held request had the whole drain")
        XCTAssertLessThan(took, .milliseconds(1_000), "and no more (the cut connection is not waited for)")
        XCTAssertEqual(holding.server.drainCutCount, 1)
        let rest = client.readAll(timeout: 5)
        XCTAssertTrue(rest.closed)
        XCTAssertEqual(rest.data, [])
    }

    /// An idle keep-alive connection is closed once quiet for the quiet period, not at the drain's
    /// end, and is not counted; a request answered during the drain says `Connection: close`.
    func testIdleKeepAliveClosesOnceQuietAndAnAnswerSaysConnectionClose() throws {
        let holding = try HoldingServer { $0.limits.drainQuietPeriod = .milliseconds(200) }
        let port = holding.server.port
        let idle = try RawHTTPClient(port: port)
        let busy = try RawHTTPClient(port: port)
        busy.send("GET /held HTTP/1.1\r\nHost: t\r\n\r\n")
        HTTPServerLimitsTests.wait(seconds: 10) { holding.heldCount == 1 }
        let stopped = expectation(description: "stopped")
        let started = ContinuousClock.now
        let took = HTTPDNSLock<Duration?>(nil)
        Thread {
            holding.server.stop(drain: .seconds(20))
            took.withLock { $0 = ContinuousClock.now - started }
            stopped.fulfill()
        }.start()
        // The listener closes first.
        HTTPServerLimitsTests.wait(seconds: 10) { (try? RawHTTPClient(port: port)) == nil }
        XCTAssertThrowsError(try RawHTTPClient(port: port))
        let quiet = idle.readAll(timeout: 10)
        XCTAssertTrue(quiet.closed, "closed once quiet")
        XCTAssertEqual(quiet.data, [])
        holding.release()
        let answer = busy.readAll(timeout: 10)
        let text = String(decoding: answer.data, as: UTF8.self)
        XCTAssertTrue(text.hasPrefix("HTTP/1.1 200 OK\r\n"), text)
        XCTAssertTrue(text.contains("\r\nConnection: close\r\n"), text)
        XCTAssertTrue(text.hasSuffix("answered\n"), text)
        XCTAssertTrue(answer.closed)
        wait(for: [stopped], timeout: 30)
        XCTAssertLessThan(try XCTUnwrap(took.withLock { $0 }), .seconds(10), "over once every connection closed")
        XCTAssertEqual(holding.server.drainCutCount, 0)
    }

    /// HTTP/2 (h2c): a stream in hand is answered after GOAWAY, and the client is told no more
    /// (nghttp prints the GOAWAY it received).
    func testHTTP2StreamInHandIsAnsweredAfterGOAWAY() throws {
        let holding = try HoldingServer { $0.limits.drainQuietPeriod = .milliseconds(200) }
        let url = holding.server.baseURL.absoluteString + "/held"
        let result = HTTPDNSLock<(status: Int32, output: String)?>(nil)
        let done = expectation(description: "nghttp finished")
        Thread {
            result.withLock { $0 = try? HTTPServerLimitsTests.run("/usr/bin/nghttp", ["-nv", "-t", "30", url]) }
            done.fulfill()
        }.start()
        HTTPServerLimitsTests.wait(seconds: 10) { holding.heldCount == 1 }
        let stopped = expectation(description: "stopped")
        Thread {
            holding.server.stop(drain: .seconds(20))
            stopped.fulfill()
        }.start()
        HTTPServerLimitsTests.wait(seconds: 10) { (try? RawHTTPClient(port: holding.server.port)) == nil }
        holding.release()
        wait(for: [done, stopped], timeout: 60)
        let output = try XCTUnwrap(result.withLock { $0 }).output
        XCTAssertTrue(output.contains("recv GOAWAY frame"), output)
        XCTAssertTrue(output.contains(":status: 200"), output)
        XCTAssertEqual(holding.server.drainCutCount, 0)
    }
}
