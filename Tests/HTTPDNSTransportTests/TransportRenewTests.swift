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

    /// Hand-overs (submits, cancellations) racing the end of the loop they wake: each renewal
    /// releases a loop whose wakeups may still be on their way (a waker sends its wakeup after the
    /// inbox's lock, and the loop frees its multi handle only once no waker is left; the sanitizer
    /// runs of this class are its check). Every request ends, answered or cancelled.
    func testHandOversRacingTheLoopsEndAllEnd() async throws {
        let server = try startServer()
        let transport: HTTPTransport = self.transport
        let slow = url("http://127.0.0.1:\(server.port)/sleep?ms=20")
        var answered = 0
        var cancelled = 0
        for _ in 0..<15 {
            let outcomes = await withTaskGroup(of: Int.self) { group -> [Int] in
                for index in 0..<8 {
                    group.addTask {
                        let request = Task { try await transport.send(HTTPTransportRequest(url: slow)) }
                        if index % 2 == 0 { request.cancel() }
                        switch await request.result {
                        case .success(let response): return response.statusCode
                        case .failure(let error): return (error as? HTTPTransportError)?.code == .cancelled ? -1 : 0
                        }
                    }
                }
                group.addTask {
                    transport.renewConnections()
                    return -2
                }
                return await group.reduce(into: []) { $0.append($1) }
            }
            XCTAssertFalse(outcomes.contains(0), "every request answered or cancelled: \(outcomes)")
            answered += outcomes.filter { $0 == 200 }.count
            cancelled += outcomes.filter { $0 == -1 }.count
        }
        XCTAssertGreaterThanOrEqual(answered, 60, "the requests not cancelled are answered")
        XCTAssertEqual(answered + cancelled, 120)
    }
}
