import Foundation
import HTTPDNS
import HTTPDNSCore
import HTTPDNSServer
import HTTPDNSTestSupport
import HTTPDNSNetworking
import HTTPServing
import XCTest
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Acceptance 3: a 64 MiB streamed POST and a small in-memory POST arrive byte-exact, checked by
/// the server side: nginx (HTTPS, HTTP/2, unbuffered) proxies to a backend that hashes the body as
/// it arrives and answers with the SHA-256 and the byte count.
final class UploadTests: XCTestCase {
    func testLargeStreamedAndSmallPostsArriveByteExact() async throws {
        let certificates = try Bed.certificates()
        defer { certificates.remove() }
        let backend = try HTTPServer(
            configuration: .init(address: Bed.services, port: 0),
            bodySink: { _ in SHA256BodySink() },
            handler: { request, sink in
                guard let sink = sink as? SHA256BodySink else { return .text("no sink\n", status: 500) }
                return .text("\(request.method) \(sink.byteCount) \(sink.finish())")
            })
        defer { backend.stop() }
        let nginx = try Nginx(.init(virtualHosts: [
            .init(["upload.test"], tls: try certificates.issue(dnsNames: ["upload.test"]), address: Bed.origin, locations: [
                .proxy("/", to: "http://\(Bed.services):\(backend.port)"),
            ]),
        ]))
        defer { nginx.stop() }
        let service = try Bed.httpdnsService(["upload.test": [Bed.origin]])
        defer { service.stop() }
        let engine = try Bed.engine(providers: [Bed.dnspod(service)], localDNS: nil, trusting: certificates)
        let session = try Bed.session(Bed.client(engine))
        let url = URL(string: "https://upload.test:\(try XCTUnwrap(nginx.httpsPort))/upload")!

        // 64 MiB of random bytes in a file: the upload reads it piece by piece, nothing holds it.
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("httpdns-upload-\(UUID().uuidString).bin")
        defer { try? FileManager.default.removeItem(at: file) }
        let size = 64 << 20
        try Self.writeRandomFile(file, size: size)
        let expected = try SHA256BodySink.hashFile(atPath: file.path)
        XCTAssertEqual(expected.count, size)
        XCTAssertEqual(expected.hex, try Self.sha256sum(file), "the incremental hash agrees with coreutils")

        var large = URLRequest(url: url, timeoutInterval: 120)
        large.httpMethod = "POST"
        large.httpBodyStream = try XCTUnwrap(InputStream(fileAtPath: file.path))
        large.setValue(String(size), forHTTPHeaderField: "Content-Length")
        large.setValue("application/octet-stream", forHTTPHeaderField: "Content-Type")
        let (answer, response) = try await session.data(for: large)
        XCTAssertEqual((response as? HTTPURLResponse)?.statusCode, 200)
        XCTAssertEqual(String(decoding: answer, as: UTF8.self), "POST \(size) \(expected.hex)")

        let small = Data("name=caf%C3%A9&binary=\u{0}\u{1}\u{FF}".utf8) + Data([0, 255, 10, 13])
        var smallRequest = URLRequest(url: url)
        smallRequest.httpMethod = "POST"
        smallRequest.httpBody = small
        let (smallAnswer, _) = try await session.data(for: smallRequest)
        XCTAssertEqual(String(decoding: smallAnswer, as: UTF8.self), "POST \(small.count) \(Self.sha256(small))")

        let logged = await nginx.accessLog(atLeast: 2)
        XCTAssertEqual(logged.count, 2)
        XCTAssertGreaterThan(logged.first?.requestLength ?? 0, size, "nginx read the whole 64 MiB body")
        XCTAssertEqual(logged.first?.httpProtocol, "HTTP/2.0")
    }

    /// Writes `size` bytes from /dev/urandom in 1 MiB pieces.
    static func writeRandomFile(_ url: URL, size: Int) throws {
        let random = try XCTUnwrap(FileHandle(forReadingAtPath: "/dev/urandom"))
        defer { try? random.close() }
        XCTAssertTrue(FileManager.default.createFile(atPath: url.path, contents: nil))
        let output = try FileHandle(forWritingTo: url)
        defer { try? output.close() }
        var left = size
        while left > 0 {
            let piece = try XCTUnwrap(try random.read(upToCount: min(left, 1 << 20)))
            try output.write(contentsOf: piece)
            left -= piece.count
        }
    }

    /// The one-shot hash of HTTPDNSCore: independent of the sink the server uses.
    static func sha256(_ data: Data) -> String {
        HTTPDNSCrypto.sha256([UInt8](data)).map { String(format: "%02x", $0) }.joined()
    }

    /// `sha256sum FILE`, the coreutils command.
    static func sha256sum(_ file: URL) throws -> String {
        let process = try RunningTool(executable: URL(fileURLWithPath: "/usr/bin/sha256sum"), arguments: [file.path])
        _ = try process.wait(timeout: .seconds(120))
        return String(String(decoding: process.stdout, as: UTF8.self).prefix(64))
    }
}
