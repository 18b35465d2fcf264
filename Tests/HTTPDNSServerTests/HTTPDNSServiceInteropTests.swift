import DNSWire
import Foundation
import HTTPDNSCore
import HTTPDNSServer
import HTTPDNSTestSupport
import XCTest

/// Clients nobody here wrote: curl's `--doh-url` and dig's `+https`, run as the real binaries
/// against the service on 127.0.0.1.
final class HTTPDNSServiceInteropTests: HTTPDNSServiceTestCase {
    struct Run {
        var status: Int32
        var output: String
        var errors: String
    }

    /// Runs a binary to completion (killed after `seconds`), collecting its output.
    func run(_ path: String, _ arguments: [String], seconds: Double = 30) throws -> Run {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = arguments
        let output = Pipe()
        let errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        let watchdog = DispatchWorkItem { if process.isRunning { process.terminate() } }
        DispatchQueue.global().asyncAfter(deadline: .now() + seconds, execute: watchdog)
        let out = output.fileHandleForReading.readDataToEndOfFile()
        let err = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        watchdog.cancel()
        return Run(
            status: process.terminationStatus, output: String(decoding: out, as: UTF8.self),
            errors: String(decoding: err, as: UTF8.self))
    }

    /// An HTTPS service whose certificate (IP SAN 127.0.0.1) is issued by a fresh private CA.
    func startHTTPSService() throws -> (HTTPDNSService, TestCertificates) {
        let certificates = try TestCertificates()
        let leaf = try certificates.issue(dnsNames: ["localhost"], ipAddresses: [IPAddress("127.0.0.1")!])
        let service = try startService { configuration in
            configuration.tlsCertificatePEM = leaf.certificatePEM
            configuration.tlsKeyPEM = leaf.keyPEM
        }
        return (service, certificates)
    }

    func testCurlResolvesThroughTheServiceAndConnectsToTheZoneAddress() throws {
        let (service, certificates) = try startHTTPSService()
        defer { certificates.remove() }
        let origin = try TestHTTPServer()
        defer { origin.stop() }
        let port = try XCTUnwrap(service.port)
        let result = try run("/usr/bin/curl", [
            "-sS", "--noproxy", "*", "--max-time", "20", "-D", "-",
            "--doh-url", "https://127.0.0.1:\(port)/dns-query", "--cacert", certificates.caCertificatePath,
            "http://name.test:\(origin.port)/hello",
        ])
        XCTAssertEqual(result.status, 0, result.errors)
        XCTAssertTrue(result.output.contains("X-Echo-Host: name.test:\(origin.port)"), result.output)
        XCTAssertTrue(result.output.contains("X-Server-Address: 127.0.0.1"), result.output)
        XCTAssertEqual(origin.requests.map(\.path), ["/hello"])
    }

    func testCurlRefusesTheServiceWithoutTrustingItsCA() throws {
        let (service, certificates) = try startHTTPSService()
        defer { certificates.remove() }
        let origin = try TestHTTPServer()
        defer { origin.stop() }
        let result = try run("/usr/bin/curl", [
            "-sS", "--noproxy", "*", "--max-time", "20",
            "--doh-url", "https://127.0.0.1:\(try XCTUnwrap(service.port))/dns-query",
            "http://name.test:\(origin.port)/hello",
        ])
        XCTAssertNotEqual(result.status, 0)
        XCTAssertTrue(origin.requests.isEmpty)
    }

    func testCurlGetsNXDOMAINForUnknownNames() throws {
        let (service, certificates) = try startHTTPSService()
        defer { certificates.remove() }
        let result = try run("/usr/bin/curl", [
            "-sS", "--noproxy", "*", "--max-time", "20",
            "--doh-url", "https://127.0.0.1:\(try XCTUnwrap(service.port))/dns-query", "--cacert", certificates.caCertificatePath,
            "http://nowhere.example.test:9/",
        ])
        XCTAssertEqual(result.status, 6, result.errors)  // CURLE_COULDNT_RESOLVE_HOST
    }
}
