import Foundation
import HTTPDNSCore
import HTTPDNSTransport
import XCTest

/// ``HTTPTransport/renewConnections()``: after a network change new requests open new connections,
/// and a request in flight finishes on its own.
final class TransportRenewTests: TransportTestCase {
    func testRequestsAfterARenewalOpenANewConnectionAndReuseIt() async throws {
        let server = try startServer()
        let echo = url("http://127.0.0.1:\(server.port)/echo")
        var opened: [Int] = []
        for round in 0..<3 {
            for _ in 0..<3 {
                opened.append(try await transport.send(HTTPTransportRequest(url: echo)).metrics.newConnections)
            }
            if round < 2 { transport.renewConnections() }
        }
        XCTAssertEqual(opened, [1, 0, 0, 1, 0, 0, 1, 0, 0], "one new connection per network, reused on it")
        XCTAssertEqual(server.server.connectionCount, 3)
    }

    func testARequestInFlightFinishesOnItsConnection() async throws {
        let server = try startServer()
        let transport: HTTPTransport = self.transport
        let slowURL = url("http://127.0.0.1:\(server.port)/sleep?ms=300")
        let slow = Task { try await transport.send(HTTPTransportRequest(url: slowURL)) }
        try await Task.sleep(for: .milliseconds(100))
        // Off the cooperative pool, as the network watcher's thread calls it.
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            Thread { transport.renewConnections(); continuation.resume() }.start()
        }
        let response = try await slow.value
        XCTAssertEqual(response.statusCode, 200)
        XCTAssertEqual(response.body, Data("slept".utf8))
        let after = try await transport.send(HTTPTransportRequest(url: url("http://127.0.0.1:\(server.port)/echo")))
        XCTAssertEqual(after.metrics.newConnections, 1, "not the connection of the old network")
        // A second renewal releases the first loop, whose last request is done.
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            Thread { transport.renewConnections(); continuation.resume() }.start()
        }
        let again = try await transport.send(HTTPTransportRequest(url: url("http://127.0.0.1:\(server.port)/echo")))
        XCTAssertEqual(again.statusCode, 200)
    }
}
