import Foundation
import HTTPDNSCore
import HTTPDNSTestSupport
import HTTPDNSTransport
import XCTest

final class TransportTLSTests: TransportTestCase {
    private var certificates: TestCertificates!

    override func setUpWithError() throws {
        try super.setUpWithError()
        certificates = try TestCertificates()
    }

    override func tearDown() {
        certificates?.remove()
        super.tearDown()
    }

    private func request(port: Int, host: String = "a.test", trust: HTTPDNSTrust) -> HTTPTransportRequest {
        var request = HTTPTransportRequest(url: url("https://\(host):\(port)/echo"))
        request.pinnedAddresses = [HTTPDNSIPAddress("127.0.0.1")!]
        request.trust = trust
        return request
    }

    func testPrivateCAVerifiesPinnedHost() async throws {
        let leaf = try certificates.issue(dnsNames: ["a.test"])
        let server = try startServer(tls: leaf)
        let pem = try await transport.send(request(port: server.port, trust: .caPEM(Data(certificates.caCertificatePEM.utf8))))
        XCTAssertEqual(pem.statusCode, 200)
        XCTAssertEqual(pem.header("X-Echo-Host"), "a.test:\(server.port)")
        let file = try await transport.send(request(port: server.port, trust: .caFile(certificates.caCertificatePath)))
        XCTAssertEqual(file.statusCode, 200)
    }

    func testSystemTrustRejectsPrivateCA() async throws {
        let leaf = try certificates.issue(dnsNames: ["a.test"])
        let server = try startServer(tls: leaf)
        let error = await transportError { _ = try await self.transport.send(self.request(port: server.port, trust: .system)) }
        XCTAssertEqual(error?.code, .serverCertificateUntrusted)
        XCTAssertEqual(error?.urlError.code, .serverCertificateUntrusted)
        XCTAssertEqual(error?.host, "a.test")
        XCTAssertTrue(server.requests.isEmpty)
    }

    func testCertificateForAnotherNameIsRejected() async throws {
        let leaf = try certificates.issue(dnsNames: ["b.test"], ipAddresses: [HTTPDNSIPAddress("127.0.0.1")!])
        let server = try startServer(tls: leaf)
        let trust = HTTPDNSTrust.caPEM(Data(certificates.caCertificatePEM.utf8))
        let error = await transportError { _ = try await self.transport.send(self.request(port: server.port, trust: trust)) }
        XCTAssertEqual(error?.code, .serverCertificateUntrusted)
        XCTAssertTrue(server.requests.isEmpty)
    }

    func testWildcardCoversOneLabelOnly() async throws {
        let leaf = try certificates.issue(dnsNames: ["*.example.test"])
        let server = try startServer(tls: leaf)
        let trust = HTTPDNSTrust.caPEM(Data(certificates.caCertificatePEM.utf8))
        let ok = try await transport.send(request(port: server.port, host: "a.example.test", trust: trust))
        XCTAssertEqual(ok.statusCode, 200)
        let error = await transportError {
            _ = try await self.transport.send(self.request(port: server.port, host: "a.b.example.test", trust: trust))
        }
        XCTAssertEqual(error?.code, .serverCertificateUntrusted)
    }
}
