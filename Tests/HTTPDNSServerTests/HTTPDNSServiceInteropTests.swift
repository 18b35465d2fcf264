import DNSWire
import Foundation
#if canImport(Glibc)
import Glibc
#endif
import HTTPDNSCore
import HTTPDNSServer
import HTTPDNSTestSupport
import XCTest

/// Clients nobody here wrote: curl's `--doh-url` and dig's `+https`, run as the real binaries
/// against the service on 127.0.0.1.
class HTTPDNSServiceInteropTestsBase: HTTPDNSServiceTestCase {
    struct Run {
        var status: Int32
        var output: String
        var errors: String
    }

    /// Runs a binary to completion (killed after `seconds`), collecting its output.
    func run(_ path: String, _ arguments: [String], seconds: Double = 30) throws -> Run {
        let process = try RunningTool(executable: URL(fileURLWithPath: path), arguments: arguments)
        let status = try process.wait(timeout: .milliseconds(Int(seconds * 1000)))
        return Run(
            status: status, output: String(decoding: process.stdout, as: UTF8.self),
            errors: String(decoding: process.stderr, as: UTF8.self))
    }

    /// An HTTPS service whose certificate (IP SAN 127.0.0.1) is issued by a fresh private CA.
    func startHTTPSService(
        _ configure: (inout HTTPDNSService.Configuration) -> Void = { _ in }
    ) throws -> (HTTPDNSService, TestCertificates) {
        let certificates = try TestCertificates()
        let leaf = try certificates.issue(dnsNames: ["localhost"], ipAddresses: [HTTPDNSIPAddress("127.0.0.1")!])
        let service = try startService { configuration in
            configuration.tlsCertificatePEM = leaf.certificatePEM
            configuration.tlsKeyPEM = leaf.keyPEM
            configure(&configuration)
        }
        return (service, certificates)
    }
}

final class HTTPDNSServiceInteropTests: HTTPDNSServiceInteropTestsBase {

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

/// dig 9.18 speaks DNS over HTTPS only over HTTP/2 (it fails with "ALPN for HTTP/2 failed" against
/// an HTTP/1.1-only server, and `+http-plain` is h2c). The service speaks HTTP/2 itself, so dig
/// reaches it directly; behind nginx (TLS and HTTP/2 in front, HTTP/1.1 to the service) as well.
final class HTTPDNSServiceDigTests: HTTPDNSServiceInteropTestsBase {
    func testDigOverHTTPSThroughNginx() throws {
        let service = try startService()
        let certificates = try TestCertificates()
        defer { certificates.remove() }
        let leaf = try certificates.issue(dnsNames: ["localhost"], ipAddresses: [HTTPDNSIPAddress("127.0.0.1")!])
        let front = Nginx.Location.proxy("/dns-query", to: "http://127.0.0.1:\(try XCTUnwrap(service.port))")
        let nginx = try Nginx(Nginx.Configuration(virtualHosts: [Nginx.VirtualHost(["localhost"], tls: leaf, locations: [front])]))
        defer { nginx.stop() }
        let common = [
            "@127.0.0.1", "-p", "\(try XCTUnwrap(nginx.httpsPort))", "+tries=1", "+timeout=5",
            "+tls-ca=\(certificates.caCertificatePath)", "+tls-hostname=localhost",
        ]
        for method in ["+https", "+https-get"] {
            let answer = try run("/usr/bin/dig", [method] + common + ["name.test", "A"])
            XCTAssertEqual(answer.status, 0, answer.errors + answer.output + nginx.errorLog)
            XCTAssertTrue(answer.output.contains("status: NOERROR"), answer.output)
            XCTAssertTrue(answer.output.contains("flags: qr aa rd ra"), answer.output)
            XCTAssertTrue(answer.output.range(of: #"name\.test\.\s+5\s+IN\s+A\s+127\.0\.0\.1"#, options: .regularExpression) != nil, answer.output)
        }
        let v6 = try run("/usr/bin/dig", ["+https"] + common + ["www.example.test", "AAAA", "+short"])
        XCTAssertEqual(v6.output.trimmingCharacters(in: .whitespacesAndNewlines), "2001:db8::1", v6.errors)
        let missing = try run("/usr/bin/dig", ["+https"] + common + ["nowhere.example.test", "A"])
        XCTAssertTrue(missing.output.contains("status: NXDOMAIN"), missing.output)
        XCTAssertTrue(missing.output.contains("example.test.\t\t60\tIN\tSOA"), missing.output)
    }

    func testDigSpeaksHTTP2ToTheServiceDirectlyOverTLSAndH2C() throws {
        let certificates = try TestCertificates()
        defer { certificates.remove() }
        let leaf = try certificates.issue(dnsNames: ["localhost"], ipAddresses: [HTTPDNSIPAddress("127.0.0.1")!])
        let service = try startService { configuration in
            configuration.tlsCertificatePEM = leaf.certificatePEM
            configuration.tlsKeyPEM = leaf.keyPEM
            configuration.listeners.append(HTTPDNSService.Listener(address: HTTPDNSIPAddress("127.0.0.1")!, port: 0))
        }
        let tlsPort = try XCTUnwrap(service.ports.first)
        let plainPort = service.ports[1]
        let tls = [
            "@127.0.0.1", "-p", "\(tlsPort)", "+tries=1", "+timeout=5", "+tls-ca=\(certificates.caCertificatePath)",
            "+tls-hostname=localhost",
        ]
        for method in ["+https", "+https-get"] {
            let direct = try run("/usr/bin/dig", [method] + tls + ["name.test", "A"])
            XCTAssertEqual(direct.status, 0, direct.output + direct.errors)
            XCTAssertTrue(direct.output.contains("status: NOERROR"), direct.output + direct.errors)
            XCTAssertTrue(direct.output.range(of: #"name\.test\.\s+5\s+IN\s+A\s+127\.0\.0\.1"#, options: .regularExpression) != nil, direct.output)
        }
        let h2c = try run("/usr/bin/dig", ["+http-plain", "@127.0.0.1", "-p", "\(plainPort)", "+tries=1", "+timeout=5", "name.test", "A"])
        XCTAssertEqual(h2c.status, 0, h2c.output + h2c.errors)
        XCTAssertTrue(h2c.output.contains("status: NOERROR"), h2c.output + h2c.errors)
    }
}
