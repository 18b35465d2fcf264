import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import HTTPDNSDirect
import HTTPDNSTestSupport
import XCTest

/// One question for every route: did the certificate fail? The shapes below are what each route
/// gives (the corelibs one as observed with Swift 6.3 / libcurl 7.88, plain and through a proxy).
final class CertificateFailureTests: XCTestCase {
    func testTheClientsAndTheURLProtocolsCodeIsACertificateFailure() {
        XCTAssertTrue(HTTPDNSClient.isCertificateFailure(URLError(.serverCertificateUntrusted)))
        XCTAssertTrue(HTTPDNSClient.isCertificateFailure(URLError(.serverCertificateHasBadDate)))
    }

    func testCorelibsCatchAllWithLibcurlsVerificationTextIsACertificateFailure() {
        let underlying = NSError(domain: NSURLErrorDomain, code: -1, userInfo: [
            NSLocalizedDescriptionKey: "SSL certificate problem: self-signed certificate",
        ])
        let error = URLError(.unknown, userInfo: [
            NSLocalizedDescriptionKey: "SSL certificate problem: self-signed certificate", NSUnderlyingErrorKey: underlying,
        ])
        XCTAssertTrue(HTTPDNSClient.isCertificateFailure(error))
        let name = URLError(.unknown, userInfo: [
            NSLocalizedDescriptionKey: "SSL: no alternative certificate subject name matches target host name 'www.example.test'",
        ])
        XCTAssertTrue(HTTPDNSClient.isCertificateFailure(name))
    }

    /// What plain corelibs `URLSession` really gives (the proxy route's program does its own TLS):
    /// a private CA's certificate on `localhost` (resolved from /etc/hosts, loopback only).
    func testPlainURLSessionsUntrustedCertificateIsRecognised() async throws {
        let certificates = try TestCertificates()
        defer { certificates.remove() }
        let origin = try Origin(address: "127.0.0.1", tls: try certificates.issue(dnsNames: ["localhost"]))
        defer { origin.stop() }
        let session = URLSession(configuration: .ephemeral)
        do {
            _ = try await session.data(from: URL(string: "https://localhost:\(origin.port)/")!)
            XCTFail("a private CA's certificate was trusted by the system bundle")
        } catch {
            XCTAssertTrue(HTTPDNSClient.isCertificateFailure(error), "\(error)")
        }
        XCTAssertTrue(origin.requests.isEmpty, "no request may pass an unverified handshake")
    }

    func testOtherFailuresAreNot() {
        XCTAssertFalse(HTTPDNSClient.isCertificateFailure(URLError(.cannotConnectToHost)))
        XCTAssertFalse(HTTPDNSClient.isCertificateFailure(URLError(.unknown, userInfo: [
            NSLocalizedDescriptionKey: "[CONN-0-0] send: no filter connected",
        ])))
        XCTAssertFalse(HTTPDNSClient.isCertificateFailure(CancellationError()))
    }
}
