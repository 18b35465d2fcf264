import Foundation
import HTTPDNSCore
import HTTPDNSTransport
import XCTest

final class TransportFailureTests: TransportTestCase {
    func testRefusedPortIsCannotConnect() async throws {
        let server = try startServer()
        let port = server.port
        server.stop()
        let error = await transportError {
            _ = try await self.transport.send(HTTPTransportRequest(url: self.url("http://127.0.0.1:\(port)/")))
        }
        XCTAssertEqual(error?.code, .cannotConnectToHost)
        XCTAssertEqual(error?.urlError.code, .cannotConnectToHost)
        XCTAssertEqual(error?.requestBytesSent, 0)
        XCTAssertNotNil(error?.curlCode)
        XCTAssertFalse(error?.detail.isEmpty ?? true)
    }

    func testRefusedPinnedAddressReportsIt() async throws {
        let server = try startServer("127.0.0.3")
        let port = server.port
        server.stop()
        var request = HTTPTransportRequest(url: url("http://gone.test:\(port)/"))
        request.pinnedAddresses = [HTTPDNSIPAddress("127.0.0.3")!]
        let error = await transportError { _ = try await self.transport.send(request) }
        XCTAssertEqual(error?.code, .cannotConnectToHost)
        XCTAssertEqual(error?.attemptedAddress, HTTPDNSIPAddress("127.0.0.3"))
        XCTAssertEqual(error?.host, "gone.test")
    }

    func testSlowHandlerTimesOut() async throws {
        let server = try startServer()
        var request = HTTPTransportRequest(url: url("http://127.0.0.1:\(server.port)/sleep?ms=1500"))
        request.timeouts.total = .milliseconds(200)
        let error = await transportError { _ = try await self.transport.send(request) }
        XCTAssertEqual(error?.code, .timedOut)
        XCTAssertEqual(error?.urlError.code, .timedOut)
        // The request went out before the timeout: not safe to retry blindly.
        XCTAssertGreaterThan(error?.requestBytesSent ?? 0, 0)
    }

    func testResponseTooLargeByContentLength() async throws {
        let server = try startServer()
        var request = HTTPTransportRequest(url: url("http://127.0.0.1:\(server.port)/bytes?n=100000"))
        request.maxResponseBytes = 1000
        let error = await transportError { _ = try await self.transport.send(request) }
        XCTAssertEqual(error?.code, .responseTooLarge)
        XCTAssertEqual(error?.urlError.code, .dataLengthExceedsMaximum)
    }

    func testResponseTooLargeWhileStreaming() async throws {
        let server = try startServer()
        // Endless and chunked: only the running count can stop it.
        var request = HTTPTransportRequest(url: url("http://127.0.0.1:\(server.port)/endless?chunk=4096"))
        request.maxResponseBytes = 200_000
        let error = await transportError { _ = try await self.transport.send(request) }
        XCTAssertEqual(error?.code, .responseTooLarge)
        var exact = HTTPTransportRequest(url: url("http://127.0.0.1:\(server.port)/chunked?n=5000"))
        exact.maxResponseBytes = 5000
        let response = try await transport.send(exact)
        XCTAssertEqual(response.body.count, 5000)
    }

    func testMalformedRequestsAreRejectedBeforeSending() async throws {
        let server = try startServer()
        var injected = HTTPTransportRequest(url: url("http://127.0.0.1:\(server.port)/"))
        injected.headers = [HTTPTransportHeader(name: "X-A", value: "1\r\nX-Injected: 2")]
        let headerError = await transportError { _ = try await self.transport.send(injected) }
        XCTAssertEqual(headerError?.code, .invalidRequest)
        var badName = HTTPTransportRequest(url: url("http://127.0.0.1:\(server.port)/"))
        badName.headers = [HTTPTransportHeader(name: "Bad Name", value: "1")]
        let nameError = await transportError { _ = try await self.transport.send(badName) }
        XCTAssertEqual(nameError?.code, .invalidRequest)
        let method = await transportError {
            _ = try await self.transport.send(HTTPTransportRequest(url: self.url("http://127.0.0.1:\(server.port)/"), method: "GET /x"))
        }
        XCTAssertEqual(method?.code, .invalidRequest)
        let scheme = await transportError {
            _ = try await self.transport.send(HTTPTransportRequest(url: self.url("ftp://127.0.0.1:\(server.port)/")))
        }
        XCTAssertEqual(scheme?.code, .badURL)
        XCTAssertTrue(server.requests.isEmpty)
    }

    func testFailingBodySource() async throws {
        struct Broken: HTTPTransportBodySource {
            struct Failure: Error {}
            func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int { throw Failure() }
        }
        let server = try startServer()
        var request = HTTPTransportRequest(url: url("http://127.0.0.1:\(server.port)/echo"), method: "POST")
        request.body = .stream(length: 10, source: Broken())
        let error = await transportError { _ = try await self.transport.send(request) }
        XCTAssertEqual(error?.code, .bodySourceFailed)
    }
}
