import Foundation
import HTTPDNSCore
import HTTPDNSTestSupport
import HTTPDNSTransport
import XCTest

/// A reader slower than the network pauses the transfer (libcurl's write pause) and resumes it as
/// it catches up: the receive buffer stays under its limit, and the body arrives whole and in order.
final class TransportBackpressureTests: TransportTestCase {
    private static let limit = 256 << 10

    private func smallBuffer() -> HTTPTransportReceiveBuffer {
        HTTPTransportReceiveBuffer(limit: Self.limit, resumeBelow: 64 << 10)
    }

    /// Reads `body` after `pause`, checking the buffer's fill after every chunk; returns the bytes.
    private func read(
        _ body: AsyncThrowingStream<Data, any Error>, buffer: HTTPTransportReceiveBuffer, after pause: Duration
    ) async throws -> Data {
        try await Task.sleep(for: pause)
        XCTAssertTrue(buffer.window.isPaused, "a reader that read nothing for \(pause) pauses the transfer")
        var received = Data()
        var chunks = 0
        for try await chunk in body {
            received.append(chunk)
            chunks += 1
            XCTAssertLessThanOrEqual(buffer.window.buffered, Self.limit)
            // Slower than loopback: the buffer fills and the transfer pauses again and again.
            if chunks % 16 == 0 { try await Task.sleep(for: .milliseconds(1)) }
        }
        return received
    }

    func testASlowReaderPausesTheTransferAndGetsEveryByte() async throws {
        let server = try startServer()
        let size = 8_000_000
        for path in ["/bytes?n=\(size)", "/chunked?n=\(size)"] {
            var request = HTTPTransportRequest(url: url("http://127.0.0.1:\(server.port)\(path)"))
            let buffer = smallBuffer()
            request.receiveBuffer = buffer
            let (head, body) = try await transport.stream(request)
            XCTAssertEqual(head.statusCode, 200)
            let received = try await read(body, buffer: buffer, after: .milliseconds(300))
            let letter = path.hasPrefix("/bytes") ? UInt8(ascii: "x") : UInt8(ascii: "y")
            XCTAssertEqual(received, Data(repeating: letter, count: size), path)
        }
    }

    func testASlowReaderPausesAnHTTP2Stream() async throws {
        let certificates = try TestCertificates()
        defer { certificates.remove() }
        let server = try startServer(tls: try certificates.issue(dnsNames: ["a.test"]))
        let size = 8_000_000
        var request = HTTPTransportRequest(url: url("https://a.test:\(server.port)/bytes?n=\(size)"))
        request.pinnedAddresses = [HTTPDNSIPAddress("127.0.0.1")!]
        request.trust = .caFile(certificates.caCertificatePath)
        let buffer = smallBuffer()
        request.receiveBuffer = buffer
        let (head, body) = try await transport.stream(request)
        XCTAssertEqual(head.httpVersion, "2")
        let received = try await read(body, buffer: buffer, after: .milliseconds(300))
        XCTAssertEqual(received, Data(repeating: UInt8(ascii: "x"), count: size))
    }

    /// The byte limit equals the buffer's, and the reader reads nothing at first: the chunk that
    /// fills the buffer past its limit is the one that crosses `maxResponseBytes`, refused at the
    /// pause and handed over again from inside `curl_easy_pause`, where its refusal is an error the
    /// multi handle never sees: the loop must end the transfer with it.
    func testTheByteLimitStillEndsAPausedTransfer() async throws {
        let server = try startServer()
        // Chunked: no Content-Length to refuse early, so only the running count can stop it.
        var request = HTTPTransportRequest(url: url("http://127.0.0.1:\(server.port)/chunked?n=4000000"))
        request.maxResponseBytes = Self.limit
        let buffer = smallBuffer()
        request.receiveBuffer = buffer
        let (_, body) = try await transport.stream(request)
        do {
            _ = try await read(body, buffer: buffer, after: .milliseconds(200))
            XCTFail("a body past maxResponseBytes cannot end well")
        } catch let error as HTTPTransportError {
            XCTAssertEqual(error.code, .responseTooLarge)
        }
    }

    func testReleasingAPausedStreamCancelsTheTransfer() async throws {
        let server = try startServer()
        let request = HTTPTransportRequest(url: url("http://127.0.0.1:\(server.port)/endless?chunk=65536"))
        let buffer = smallBuffer()
        func fillAndLeave() async throws {
            var paused = request
            paused.receiveBuffer = buffer
            let (_, body) = try await transport.stream(paused)
            for _ in 0..<200 where !buffer.window.isPaused { try await Task.sleep(for: .milliseconds(10)) }
            XCTAssertTrue(buffer.window.isPaused)
            _ = body
        }
        try await fillAndLeave()
        for _ in 0..<200 where server.server.openConnectionCount > 0 { try await Task.sleep(for: .milliseconds(50)) }
        XCTAssertEqual(server.server.openConnectionCount, 0, "the paused transfer was not cancelled")
        let next = try await transport.send(HTTPTransportRequest(url: url("http://127.0.0.1:\(server.port)/echo")))
        XCTAssertEqual(next.statusCode, 200)
    }
}
