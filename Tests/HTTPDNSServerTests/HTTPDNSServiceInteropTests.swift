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
        let nginx = try NginxFront(backendPort: try XCTUnwrap(service.port), leaf: leaf)
        defer { nginx.stop() }
        let common = [
            "@127.0.0.1", "-p", "\(nginx.port)", "+tries=1", "+timeout=5",
            "+tls-ca=\(certificates.caCertificatePath)", "+tls-hostname=localhost",
        ]
        for method in ["+https", "+https-get"] {
            let answer = try run("/usr/bin/dig", [method] + common + ["name.test", "A"])
            XCTAssertEqual(answer.status, 0, answer.errors + answer.output + nginx.log())
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

/// nginx (the Debian package) in the foreground on a free loopback port, terminating TLS with
/// HTTP/2 and proxying `/dns-query` to the service over HTTP/1.1.
final class NginxFront {
    struct Failure: Error, CustomStringConvertible {
        var description: String
        init(_ description: String) { self.description = description }
    }

    let port: Int
    let directory: URL
    let process = Process()

    init(backendPort: Int, leaf: TestCertificates.Leaf) throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("httpdns-nginx-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        port = try Self.freePort()
        let root = directory.path
        let configuration = """
            daemon off;
            master_process off;
            worker_processes 1;
            pid \(root)/nginx.pid;
            error_log \(root)/error.log info;
            events { worker_connections 64; }
            http {
                access_log off;
                client_body_temp_path \(root)/body;
                proxy_temp_path \(root)/proxy;
                fastcgi_temp_path \(root)/fastcgi;
                uwsgi_temp_path \(root)/uwsgi;
                scgi_temp_path \(root)/scgi;
                server {
                    listen 127.0.0.1:\(port) ssl http2;
                    ssl_certificate \(leaf.certificatePath);
                    ssl_certificate_key \(leaf.keyPath);
                    location /dns-query {
                        proxy_pass http://127.0.0.1:\(backendPort);
                        proxy_http_version 1.1;
                    }
                }
            }
            """
        let file = directory.appendingPathComponent("nginx.conf").path
        try configuration.write(toFile: file, atomically: true, encoding: .utf8)
        process.executableURL = URL(fileURLWithPath: "/usr/sbin/nginx")
        process.arguments = ["-e", "\(root)/stderr.log", "-p", root, "-c", file]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        // Ready when the port accepts connections; fail loudly if it never does.
        for _ in 0..<100 {
            if Self.accepts(port) { return }
            guard process.isRunning else { break }
            usleep(50_000)
        }
        let log = self.log()
        stop()
        throw NginxFront.Failure("nginx did not start: \(log)")
    }

    func log() -> String {
        ["error.log", "stderr.log"].compactMap {
            try? String(contentsOfFile: directory.appendingPathComponent($0).path, encoding: .utf8)
        }.joined(separator: "\n")
    }

    func stop() {
        if process.isRunning {
            process.terminate()
            process.waitUntilExit()
        }
        try? FileManager.default.removeItem(at: directory)
    }

    /// A port the kernel just handed out on 127.0.0.1 (bound, read back, released).
    static func freePort() throws -> Int {
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socket >= 0 else { throw NginxFront.Failure("socket() failed") }
        defer { close(socket) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = UInt32(0x7f00_0001).bigEndian
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(socket, $0, length) == 0 && getsockname(socket, $0, &length) == 0
            }
        }
        guard bound else { throw NginxFront.Failure("bind() failed") }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    static func accepts(_ port: Int) -> Bool {
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socket >= 0 else { return false }
        defer { close(socket) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = UInt32(0x7f00_0001).bigEndian
        return withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
    }
}
