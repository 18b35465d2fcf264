import Foundation
import HTTPDNSCore
import HTTPDNSTestSupport
import HTTPDNSTransport
import HTTPServing
import XCTest

/// Shared helpers: one transport per test, servers started on loopback and stopped afterwards.
class TransportTestCase: XCTestCase {
    var transport: HTTPTransport!
    private var servers: [TestHTTPServer] = []

    override func setUp() {
        super.setUp()
        transport = HTTPTransport()
    }

    override func tearDown() {
        for server in servers { server.stop() }
        servers.removeAll()
        transport = nil
        super.tearDown()
    }

    /// Starts a server and stops it in tearDown; fails the test loudly when it cannot start.
    func startServer(
        _ address: String = "127.0.0.1", port: Int = 0, tls: TestCertificates.Leaf? = nil,
        file: StaticString = #filePath, line: UInt = #line
    ) throws -> TestHTTPServer {
        do {
            let server = try TestHTTPServer(address: address, port: port, tls: tls)
            servers.append(server)
            return server
        } catch {
            XCTFail("cannot start a server on \(address):\(port): \(error)", file: file, line: line)
            throw error
        }
    }

    /// Two servers on the same port, one on each address (needed to pin one URL to either).
    func startServerPair(_ first: String, _ second: String) throws -> (TestHTTPServer, TestHTTPServer) {
        var lastError: (any Error)?
        for _ in 0..<20 {
            let one = try startServer(first)
            do {
                let two = try TestHTTPServer(address: second, port: one.port)
                servers.append(two)
                return (one, two)
            } catch {
                lastError = error
                one.stop()
            }
        }
        XCTFail("cannot bind \(first) and \(second) on one port: \(String(describing: lastError))")
        throw HTTPServer.StartError("no common port")
    }

    func url(_ text: String) -> URL {
        guard let url = URL(string: text) else {
            XCTFail("bad test URL \(text)")
            return URL(string: "http://invalid.test/")!
        }
        return url
    }

    /// Runs `body` and returns the transport error it throws, failing when it succeeds.
    func transportError(
        file: StaticString = #filePath, line: UInt = #line, _ body: () async throws -> Void
    ) async -> HTTPTransportError? {
        do {
            try await body()
            XCTFail("expected an HTTPTransportError", file: file, line: line)
            return nil
        } catch let error as HTTPTransportError {
            return error
        } catch {
            XCTFail("expected an HTTPTransportError, got \(error)", file: file, line: line)
            return nil
        }
    }
}
