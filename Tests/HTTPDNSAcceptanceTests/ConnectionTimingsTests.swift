import Foundation
import HTTPDNS
import HTTPDNSCore
import HTTPDNSTestSupport
import HTTPDNSTransport
import HTTPDNSNetworking
import XCTest
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Per-request timings in the connection report, over HTTPS on loopback.
final class ConnectionTimingsTests: XCTestCase {
    func testConnectionReportTimingsOfANewAndAReusedConnection() async throws {
        let certificates = try TestCertificates()
        defer { certificates.remove() }
        let server = try TestHTTPServer(address: Bed.second.description, tls: try certificates.issue(dnsNames: ["timed.test"]))
        defer { server.stop() }
        let engine = HappyEyeballsTests.engine(["timed.test": [Bed.second]], trusting: certificates)
        let client = HappyEyeballsTests.client(engine)
        let url = URL(string: "https://timed.test:\(server.port)/bytes?n=100000")!

        let first = try await client.send(URLRequest(url: url)).connection.timings
        XCTAssertGreaterThan(first.resolution, .zero, "a cache miss asked the provider")
        XCTAssertGreaterThan(first.tls, .zero, "a TLS handshake on the new connection")
        XCTAssertGreaterThanOrEqual(first.firstByte, first.resolution + first.connect + first.tls)
        let total = try XCTUnwrap(first.total, "the total is known once the body is complete")
        XCTAssertGreaterThanOrEqual(total, first.firstByte)

        // The same client again: the connection is reused, so there is no connect or TLS phase.
        let recorder = RecordingDelegate()
        client.start(URLRequest(url: url), followRedirects: true, delegate: recorder)
        guard case .success = await recorder.completed() else { return XCTFail("\(String(describing: recorder.completion))") }
        let second = try XCTUnwrap(recorder.report?.timings)
        XCTAssertEqual(second.connect, .zero)
        XCTAssertEqual(second.tls, .zero)
        XCTAssertGreaterThan(second.firstByte, .zero)
        XCTAssertNil(second.total, "the report handed over with the head comes before the body")
    }
}
