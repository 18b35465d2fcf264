import Foundation
import HTTPDNSCore
import HTTPDNSTransport
import XCTest

final class TransportPinningTests: TransportTestCase {
    func testPinnedNameIsNeverResolvedAndHostHeaderIsKept() async throws {
        let server = try startServer("127.0.0.2")
        var request = HTTPTransportRequest(url: url("http://pinned.test:\(server.port)/echo"))
        request.pinnedAddresses = [HTTPDNSIPAddress("127.0.0.2")!]
        let response = try await transport.send(request)
        XCTAssertEqual(response.statusCode, 200)
        XCTAssertEqual(response.connectedAddress, HTTPDNSIPAddress("127.0.0.2"))
        XCTAssertEqual(server.requests.first?.header("Host"), "pinned.test:\(server.port)")
    }

    func testSameHostPinnedToDifferentAddressesReachesEachServer() async throws {
        let (two, three) = try startServerPair("127.0.0.2", "127.0.0.3")
        let port = two.port
        // Alternate so that a reused connection or a stale resolve entry would show up at once.
        for round in 0..<4 {
            for (address, server) in [("127.0.0.2", two), ("127.0.0.3", three)] {
                var request = HTTPTransportRequest(url: url("http://pinned.test:\(port)/echo?round=\(round)"))
                request.pinnedAddresses = [HTTPDNSIPAddress(address)!]
                let response = try await transport.send(request)
                XCTAssertEqual(response.header("X-Server-Address"), address, "round \(round)")
                XCTAssertEqual(response.connectedAddress, HTTPDNSIPAddress(address))
                XCTAssertEqual(server.requests.last?.rawQuery, "round=\(round)")
            }
        }
        XCTAssertEqual(two.requests.count, 4)
        XCTAssertEqual(three.requests.count, 4)
        // Each address kept its own reused connection.
        XCTAssertEqual(two.server.connectionCount, 1)
        XCTAssertEqual(three.server.connectionCount, 1)
    }

    func testConcurrentRequestsPinnedToDifferentAddresses() async throws {
        let (two, three) = try startServerPair("127.0.0.2", "127.0.0.3")
        let port = two.port
        let transport = self.transport!
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<30 {
                let address = index % 2 == 0 ? "127.0.0.2" : "127.0.0.3"
                group.addTask {
                    var request = HTTPTransportRequest(url: URL(string: "http://pinned.test:\(port)/echo?\(index)")!)
                    request.pinnedAddresses = [HTTPDNSIPAddress(address)!]
                    let response = try await transport.send(request)
                    XCTAssertEqual(response.header("X-Server-Address"), address)
                }
            }
            try await group.waitForAll()
        }
        XCTAssertEqual(two.requests.count, 15)
        XCTAssertEqual(three.requests.count, 15)
    }

    func testUnpinnedRequestDoesNotReusePinnedConnection() async throws {
        let (one, two) = try startServerPair("127.0.0.1", "127.0.0.2")
        var pinned = HTTPTransportRequest(url: url("http://localhost:\(one.port)/echo"))
        pinned.pinnedAddresses = [HTTPDNSIPAddress("127.0.0.2")!]
        let first = try await transport.send(pinned)
        XCTAssertEqual(first.header("X-Server-Address"), "127.0.0.2")
        // Plain libcurl resolution of 127.0.0.1 must not ride on the pinned connection.
        let plain = try await transport.send(HTTPTransportRequest(url: url("http://127.0.0.1:\(one.port)/echo")))
        XCTAssertEqual(plain.header("X-Server-Address"), "127.0.0.1")
        XCTAssertEqual(two.requests.count, 1)
    }

    func testFallsThroughToNextPinnedAddress() async throws {
        let (_, two) = try startServerPair("127.0.0.1", "127.0.0.2")
        two.stop()
        // 127.0.0.2 refuses, 127.0.0.1 answers.
        var request = HTTPTransportRequest(url: url("http://multi.test:\(two.port)/echo"))
        request.pinnedAddresses = [HTTPDNSIPAddress("127.0.0.2")!, HTTPDNSIPAddress("127.0.0.1")!]
        let response = try await transport.send(request)
        XCTAssertEqual(response.header("X-Server-Address"), "127.0.0.1")
    }

    func testPinnedIPv6() async throws {
        let server = try startServer("::1")
        var request = HTTPTransportRequest(url: url("http://six.test:\(server.port)/echo"))
        request.pinnedAddresses = [HTTPDNSIPAddress("::1")!]
        let response = try await transport.send(request)
        XCTAssertEqual(response.connectedAddress, HTTPDNSIPAddress("::1"))
        XCTAssertEqual(server.requests.first?.header("Host"), "six.test:\(server.port)")
    }
}
