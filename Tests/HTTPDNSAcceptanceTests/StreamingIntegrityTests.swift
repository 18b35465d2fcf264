import Foundation
import HTTPDNS
import HTTPDNSCore
import HTTPDNSTestSupport
import HTTPDNSNetworking
import XCTest
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A slow reader of ``HTTPDNSClient/bytes(for:)`` pauses the transfer again and again (libcurl's
/// write pause, resumed from the loop thread): every byte must still arrive once and in order, over
/// HTTP/1.1 and over HTTP/2 (where libcurl 7.88 pauses the stream, not the connection).
final class StreamingIntegrityTests: XCTestCase {
    func testPausedAndResumedBodiesArriveByteExactOverHTTP1AndHTTP2() async throws {
        let directory = try StreamingMemoryTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let size = 16 << 20
        let file = directory.appendingPathComponent("body.bin")
        try UploadTests.writeRandomFile(file, size: size)
        let expected = try SHA256BodySink.hashFile(atPath: file.path)
        let certificates = try Bed.certificates()
        defer { certificates.remove() }
        let host = StreamingMemoryTests.host
        let leaf = try certificates.issue(dnsNames: [host])
        let files = Nginx.Location("/", .files(root: directory.path))
        let nginx = try Nginx(.init(virtualHosts: [
            .init([host], address: Bed.origin, locations: [files]),
            .init([host], tls: leaf, address: Bed.origin, locations: [files]),
        ]))
        defer { nginx.stop() }
        let client = StreamingMemoryTests.client(trusting: certificates)
        let urls = [
            "http://\(host):\(try XCTUnwrap(nginx.httpPort))/body.bin",
            "https://\(host):\(try XCTUnwrap(nginx.httpsPort))/body.bin",
        ]
        for url in urls {
            let (response, body) = try await client.bytes(for: URLRequest(url: URL(string: url)!))
            XCTAssertEqual(response.statusCode, 200, url)
            // 16 MiB at 48 MiB/s after 300 ms: the 4 MiB receive buffer fills and drains several times.
            let sink = SHA256BodySink()
            let received = try await StreamingMemoryTests.read(body, after: .milliseconds(300), bytesPerSecond: 48 << 20, into: sink)
            XCTAssertEqual(received, size, url)
            XCTAssertEqual(sink.finish(), expected.hex, url)
        }
        let protocols = await nginx.accessLog(atLeast: 2).map(\.httpProtocol)
        XCTAssertEqual(protocols, ["HTTP/1.1", "HTTP/2.0"])
    }

    /// Breaking out of the loop while the transfer is paused cancels it; the client goes on working.
    func testLeavingAPausedStreamCancelsTheTransfer() async throws {
        let directory = try StreamingMemoryTests.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        try StreamingMemoryTests.writeSparseFile(directory.appendingPathComponent("body.bin"), size: 64 << 20)
        let host = StreamingMemoryTests.host
        let nginx = try Nginx(.init(virtualHosts: [.init([host], address: Bed.origin, locations: [.init("/", .files(root: directory.path))])]))
        defer { nginx.stop() }
        let client = StreamingMemoryTests.client()
        let url = URL(string: "http://\(host):\(try XCTUnwrap(nginx.httpPort))/body.bin")!

        func readSome() async throws -> Int {
            let (_, body) = try await client.bytes(for: URLRequest(url: url))
            // Long enough for the buffer to fill and the transfer to pause.
            try await Task.sleep(for: .milliseconds(500))
            var received = 0
            for try await chunk in body {
                received += chunk.count
                if received >= 1 << 20 { break }
            }
            return received
        }
        let received = try await readSome()
        XCTAssertGreaterThanOrEqual(received, 1 << 20)
        let entries = await nginx.accessLog(atLeast: 1, timeout: .seconds(10))
        XCTAssertEqual(entries.count, 1)
        XCTAssertEqual(entries.first?.completed, false, "nginx saw the transfer end before the body did")
        XCTAssertLessThan(entries.first?.bodyBytesSent ?? .max, 64 << 20)

        let (data, response) = try await client.data(for: URLRequest(url: url))
        XCTAssertEqual(response.statusCode, 200)
        XCTAssertEqual(data.count, 64 << 20, "data(for:) reads a whole body at full speed")
    }
}
