import Foundation
import HTTPDNSCore
import HTTPDNSTransport
import XCTest

final class TransportRoundTripTests: TransportTestCase {
    func testGetReturnsStatusHeadersAndBody() async throws {
        let server = try startServer()
        var request = HTTPTransportRequest(url: url("http://127.0.0.1:\(server.port)/echo?a=1&b=x%20y"))
        request.headers = [HTTPTransportHeader(name: "X-Custom", value: "hello there")]
        let response = try await transport.send(request)
        XCTAssertEqual(response.statusCode, 200)
        XCTAssertEqual(response.header("x-echo-method"), "GET")
        XCTAssertEqual(response.header("X-ECHO-QUERY"), "a=1&b=x%20y")
        XCTAssertEqual(response.header("X-Echo-X-Custom"), "hello there")
        XCTAssertEqual(response.httpVersion, "1.1")
        XCTAssertEqual(response.connectedAddress, HTTPDNSIPAddress("127.0.0.1"))
        XCTAssertEqual(response.body, Data())
        XCTAssertEqual(server.requests.first?.header("X-Custom"), "hello there")
        XCTAssertEqual(server.requests.first?.header("User-Agent"), "swift-httpdns")
    }

    func testPostEchoesBinaryBodyAndKeepsContentType() async throws {
        let server = try startServer()
        let body = Data((0..<70_000).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        var request = HTTPTransportRequest(url: url("http://127.0.0.1:\(server.port)/echo"), method: "POST")
        request.headers = [HTTPTransportHeader(name: "Content-Type", value: "application/dns-message")]
        request.body = .data(body)
        let response = try await transport.send(request)
        XCTAssertEqual(response.statusCode, 200)
        XCTAssertEqual(response.header("X-Echo-Method"), "POST")
        XCTAssertEqual(response.body, body)
        XCTAssertEqual(server.requests.last?.header("Content-Type"), "application/dns-message")
        XCTAssertGreaterThan(response.metrics.requestBytesSent, Int64(body.count))
    }

    func testPostWithoutContentTypeSendsNoFormType() async throws {
        let server = try startServer()
        var request = HTTPTransportRequest(url: url("http://127.0.0.1:\(server.port)/echo"), method: "POST")
        request.body = .data(Data("abc".utf8))
        _ = try await transport.send(request)
        XCTAssertNil(server.requests.last?.header("Content-Type"))
    }

    func testStreamingBodySourceWithUnknownLength() async throws {
        let server = try startServer()
        let source = CountingSource(total: 300_000)
        var request = HTTPTransportRequest(url: url("http://127.0.0.1:\(server.port)/echo"), method: "PUT")
        request.body = .stream(length: nil, source: source)
        let response = try await transport.send(request)
        XCTAssertEqual(response.header("X-Echo-Method"), "PUT")
        XCTAssertEqual(response.body, CountingSource.expected(300_000))
    }

    func testHeadAndCustomMethod() async throws {
        let server = try startServer()
        let head = try await transport.send(HTTPTransportRequest(url: url("http://127.0.0.1:\(server.port)/bytes?n=10"), method: "HEAD"))
        XCTAssertEqual(head.statusCode, 200)
        XCTAssertEqual(head.body, Data())
        let delete = try await transport.send(HTTPTransportRequest(url: url("http://127.0.0.1:\(server.port)/echo"), method: "DELETE"))
        XCTAssertEqual(delete.header("X-Echo-Method"), "DELETE")
    }

    func testRedirectIsReturnedNotFollowed() async throws {
        let server = try startServer()
        let response = try await transport.send(HTTPTransportRequest(url: url("http://127.0.0.1:\(server.port)/redirect")))
        XCTAssertEqual(response.statusCode, 302)
        XCTAssertEqual(response.header("location"), "/echo")
        XCTAssertEqual(server.requests.count, 1)
    }

    func testIPv6Loopback() async throws {
        let server = try startServer("::1")
        let response = try await transport.send(HTTPTransportRequest(url: url("http://[::1]:\(server.port)/echo")))
        XCTAssertEqual(response.header("X-Server-Address"), "::1")
        XCTAssertEqual(response.connectedAddress, HTTPDNSIPAddress("::1"))
    }

    func testChunkedAndLargeResponses() async throws {
        let server = try startServer()
        let chunked = try await transport.send(HTTPTransportRequest(url: url("http://127.0.0.1:\(server.port)/chunked?n=100000")))
        XCTAssertEqual(chunked.body, Data(repeating: UInt8(ascii: "y"), count: 100_000))
        let sized = try await transport.send(HTTPTransportRequest(url: url("http://127.0.0.1:\(server.port)/bytes?n=2000000")))
        XCTAssertEqual(sized.body.count, 2_000_000)
        XCTAssertEqual(sized.metrics.responseBodyBytes, 2_000_000)
    }

    func testStreamDeliversHeadThenBody() async throws {
        let server = try startServer()
        let (head, body) = try await transport.stream(HTTPTransportRequest(url: url("http://127.0.0.1:\(server.port)/chunked?n=50000")))
        XCTAssertEqual(head.statusCode, 200)
        var received = Data()
        for try await chunk in body { received.append(chunk) }
        XCTAssertEqual(received, Data(repeating: UInt8(ascii: "y"), count: 50_000))
    }

    func testFiftyConcurrentRequests() async throws {
        let server = try startServer()
        let port = server.port
        let transport = self.transport!
        try await withThrowingTaskGroup(of: (Int, HTTPTransportResponse).self) { group in
            for index in 0..<50 {
                group.addTask {
                    var request = HTTPTransportRequest(url: URL(string: "http://127.0.0.1:\(port)/echo?i=\(index)")!, method: "POST")
                    request.body = .data(Data("body-\(index)".utf8))
                    return (index, try await transport.send(request))
                }
            }
            var seen = Set<Int>()
            for try await (index, response) in group {
                XCTAssertEqual(response.statusCode, 200)
                XCTAssertEqual(response.header("X-Echo-Query"), "i=\(index)")
                XCTAssertEqual(String(decoding: response.body, as: UTF8.self), "body-\(index)")
                seen.insert(index)
            }
            XCTAssertEqual(seen.count, 50)
        }
        XCTAssertEqual(server.requests.count, 50)
        // At most maxConnectionsPerHost (8) connections serve 50 requests.
        XCTAssertLessThanOrEqual(server.server.connectionCount, 8)
    }

    func testConnectionsAreReused() async throws {
        let server = try startServer()
        var newConnections = 0
        for index in 0..<10 {
            let response = try await transport.send(HTTPTransportRequest(url: url("http://127.0.0.1:\(server.port)/echo?\(index)")))
            newConnections += response.metrics.newConnections
        }
        XCTAssertEqual(newConnections, 1)
        XCTAssertEqual(server.server.connectionCount, 1)
        XCTAssertEqual(server.requests.count, 10)
    }
}

/// A body source that produces `total` bytes of a known pattern in small reads.
final class CountingSource: HTTPTransportBodySource, @unchecked Sendable {
    private let total: Int
    private var offset = 0  // touched only on the transport's loop thread

    init(total: Int) { self.total = total }

    static func expected(_ total: Int) -> Data {
        Data((0..<total).map { UInt8(truncatingIfNeeded: $0 % 251) })
    }

    func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        let count = min(buffer.count, total - offset, 1000)
        for index in 0..<count { buffer[index] = UInt8(truncatingIfNeeded: (offset + index) % 251) }
        offset += count
        return count
    }

    func rewind() -> Bool {
        offset = 0
        return true
    }
}
