import Foundation
import HTTPDNSCore
import HTTPServing
import HTTPDNSTestSupport
import XCTest

/// Drives the server with the `curl` command (the Debian package), so these tests do not depend on
/// the transport module.
final class HTTPServerTests: XCTestCase {
    struct CurlResult {
        var status: Int
        var body: Data
        var exitCode: Int32
        var stderr: String
    }

    /// Runs `curl` against loopback; the last line of output is the status code.
    private func curl(_ arguments: [String]) throws -> CurlResult {
        let result = try ToolRunner(executable: URL(fileURLWithPath: "/usr/bin/curl"))
            .run(["-sS", "--noproxy", "*", "--max-time", "20", "-o", "-", "-w", "\n%{http_code}"] + arguments)
        let data = result.stdout
        let newline = data.lastIndex(of: UInt8(ascii: "\n")) ?? data.startIndex
        let status = Int(String(decoding: data[data.index(after: newline)...], as: UTF8.self)) ?? 0
        return CurlResult(status: status, body: Data(data[..<newline]), exitCode: result.status, stderr: result.stderrText)
    }

    private func start(
        _ configuration: HTTPServer.Configuration = .init(), handler: @escaping HTTPServer.Handler
    ) throws -> HTTPServer {
        do {
            return try HTTPServer(configuration: configuration, handler: handler)
        } catch {
            XCTFail("cannot start server: \(error)")
            throw error
        }
    }

    func testRequestPartsReachTheHandler() throws {
        let seen = HTTPDNSLock<HTTPServer.Request?>(nil)
        let server = try start { request in
            seen.withLock { $0 = request }
            return HTTPServer.Response(
                status: 201, headers: [HTTPServer.Header(name: "X-Reply", value: "yes")], body: Data("done".utf8))
        }
        defer { server.stop() }
        XCTAssertGreaterThan(server.port, 0)
        let result = try curl([
            "-H", "X-Test: one two", "-i", "\(server.baseURL)/a%20b/c?dns=AAAB&x=1+2&flag&e=%41",
        ])
        XCTAssertEqual(result.status, 201, result.stderr)
        let text = String(decoding: result.body, as: UTF8.self)
        XCTAssertTrue(text.contains("X-Reply: yes"), text)
        XCTAssertTrue(text.hasSuffix("done"), text)
        let request = try XCTUnwrap(seen.withLock { $0 })
        XCTAssertEqual(request.method, "GET")
        XCTAssertEqual(request.path, "/a b/c")
        XCTAssertEqual(request.rawQuery, "dns=AAAB&x=1+2&flag&e=%41")
        XCTAssertEqual(request.queryValue("dns"), "AAAB")
        XCTAssertEqual(request.queryValue("x"), "1 2")
        XCTAssertEqual(request.queryValue("e"), "A")
        XCTAssertTrue(request.queryItems.contains(HTTPServer.QueryItem(name: "flag", value: nil)))
        XCTAssertEqual(request.header("x-test"), "one two")
        XCTAssertEqual(request.remoteAddress, HTTPDNSIPAddress("127.0.0.1"))
        XCTAssertEqual(request.httpVersion, "HTTP/1.1")
    }

    func testPostBodyIsDelivered() throws {
        let server = try start { request in HTTPServer.Response(body: request.body) }
        defer { server.stop() }
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("body-\(UUID().uuidString)")
        let body = Data((0..<100_000).map { UInt8(truncatingIfNeeded: $0 &* 7) })
        try body.write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let result = try curl(["--data-binary", "@\(file.path)", "-H", "Content-Type: application/octet-stream", "\(server.baseURL)/"])
        XCTAssertEqual(result.status, 200, result.stderr)
        XCTAssertEqual(result.body, body)
    }

    func testOversizedBodyGets413() throws {
        var configuration = HTTPServer.Configuration()
        configuration.maxRequestBodyBytes = 1000
        let called = HTTPDNSLock(false)
        let server = try start(configuration) { _ in
            called.withLock { $0 = true }
            return HTTPServer.Response()
        }
        defer { server.stop() }
        let big = String(repeating: "a", count: 5000)
        let declared = try curl(["--data-binary", big, "\(server.baseURL)/"])
        XCTAssertEqual(declared.status, 413, declared.stderr)
        let chunked = try curl(["--data-binary", big, "-H", "Transfer-Encoding: chunked", "\(server.baseURL)/"])
        XCTAssertEqual(chunked.status, 413, chunked.stderr)
        XCTAssertFalse(called.withLock { $0 })
        let small = try curl(["--data-binary", "ok", "\(server.baseURL)/"])
        XCTAssertEqual(small.status, 200)
    }

    func testBindsOtherLoopbackAddressesAndIPv6() throws {
        for text in ["127.0.0.2", "127.0.0.3", "::1"] {
            let address = try XCTUnwrap(HTTPDNSIPAddress(text))
            let server = try start(HTTPServer.Configuration(address: address)) { request in
                .text(request.remoteAddress?.description ?? "?")
            }
            defer { server.stop() }
            let result = try curl(["\(server.baseURL)/"])
            XCTAssertEqual(result.status, 200, "\(text): \(result.stderr)")
            XCTAssertEqual(String(decoding: result.body, as: UTF8.self), text == "::1" ? "::1" : "127.0.0.1")
        }
    }

    func testStopIsIdempotentAndClosesThePort() throws {
        let server = try start { _ in .text("hi") }
        let port = server.port
        XCTAssertEqual(try curl(["http://127.0.0.1:\(port)/"]).status, 200)
        server.stop()
        server.stop()
        let after = try curl(["http://127.0.0.1:\(port)/"])
        XCTAssertNotEqual(after.exitCode, 0)
        XCTAssertEqual(after.status, 0)
    }

    func testBusyPortFailsToStart() throws {
        let first = try start { _ in .text("first") }
        defer { first.stop() }
        XCTAssertThrowsError(try HTTPServer(configuration: .init(port: first.port)) { _ in .text("second") })
    }

    func testStreamingResponseAndKeepAlive() throws {
        let server = try start { _ in
            let parts = HTTPDNSLock(["one ", "two ", "three"])
            return HTTPServer.Response(streamLength: nil) {
                parts.withLock { $0.isEmpty ? nil : Data($0.removeFirst().utf8) }
            }
        }
        defer { server.stop() }
        let url = "\(server.baseURL)/"
        let result = try curl([url, url, url])
        // `-w` prints the status after each transfer.
        XCTAssertEqual(
            String(decoding: result.body, as: UTF8.self), "one two three\n200one two three\n200one two three")
        XCTAssertEqual(server.requestCount, 3)
        XCTAssertEqual(server.connectionCount, 1)
    }

    func testTLSWithPrivateCA() throws {
        let certificates = try TestCertificates()
        defer { certificates.remove() }
        let leaf = try certificates.issue(dnsNames: ["a.test"])
        var configuration = HTTPServer.Configuration()
        configuration.tlsCertificatePEM = leaf.certificatePEM
        configuration.tlsKeyPEM = leaf.keyPEM
        let server = try start(configuration) { request in .text("secure \(request.header("Host") ?? "")") }
        defer { server.stop() }
        let resolve = "a.test:\(server.port):127.0.0.1"
        let good = try curl(["--cacert", certificates.caCertificatePath, "--resolve", resolve, "https://a.test:\(server.port)/"])
        XCTAssertEqual(good.status, 200, good.stderr)
        XCTAssertEqual(String(decoding: good.body, as: UTF8.self), "secure a.test:\(server.port)")
        let untrusted = try curl(["--resolve", resolve, "https://a.test:\(server.port)/"])
        XCTAssertEqual(untrusted.exitCode, 60, untrusted.stderr)  // CURLE_PEER_FAILED_VERIFICATION
    }

    func testTLSNeedsBothCertificateAndKey() {
        var configuration = HTTPServer.Configuration()
        configuration.tlsCertificatePEM = "-----BEGIN CERTIFICATE-----"
        XCTAssertThrowsError(try HTTPServer(configuration: configuration) { _ in .text("x") })
        configuration.tlsKeyPEM = "not a key"
        XCTAssertThrowsError(try HTTPServer(configuration: configuration) { _ in .text("x") })
    }

    func testBodySinkSeesLargeUploadIncrementally() throws {
        final class Hasher: HTTPServer.BodySink, @unchecked Sendable {
            // Touched only on the request's connection thread.
            var count = 0
            var sum: UInt64 = 0
            var calls = 0
            func append(_ bytes: UnsafeRawBufferPointer) {
                calls += 1
                count += bytes.count
                for byte in bytes { sum = sum &* 31 &+ UInt64(byte) }
            }
        }
        var configuration = HTTPServer.Configuration()
        configuration.maxRequestBodyBytes = 1024  // sinks are not limited by it
        let server = try HTTPServer(
            configuration: configuration,
            bodySink: { request in request.path == "/upload" ? Hasher() : nil },
            handler: { request, sink in
                guard let hasher = sink as? Hasher else { return .text("no sink", status: 500) }
                XCTAssertTrue(request.body.isEmpty)
                return .text("\(hasher.count) \(hasher.sum) \(hasher.calls > 1)")
            })
        defer { server.stop() }
        let size = 8 << 20
        var expectedSum: UInt64 = 0
        var bytes = [UInt8](repeating: 0, count: size)
        for index in 0..<size {
            let byte = UInt8(truncatingIfNeeded: (index &* 131) >> 3)
            bytes[index] = byte
            expectedSum = expectedSum &* 31 &+ UInt64(byte)
        }
        let body = Data(bytes)
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("upload-\(UUID().uuidString)")
        try body.write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let result = try curl(["--data-binary", "@\(file.path)", "\(server.baseURL)/upload"])
        XCTAssertEqual(result.status, 200, result.stderr)
        XCTAssertEqual(String(decoding: result.body, as: UTF8.self), "\(size) \(expectedSum) true")
    }
}
