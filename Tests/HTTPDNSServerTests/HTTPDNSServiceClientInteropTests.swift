import DNSWire
import Foundation
import HTTPDNSCore
import HTTPDNSServer
import HTTPDNSTestSupport
import XCTest

/// Independent DNS-over-HTTPS clients straight against the service (no proxy in front): kdig
/// (knot-dnsutils) over HTTP/2 with TLS, dnsperf's DoH mode, and curl over HTTP/1.1, HTTP/2 with
/// TLS and h2c; each verifies the private CA where it can.
final class HTTPDNSServiceClientInteropTests: HTTPDNSServiceInteropTestsBase {
    func testKdigOverHTTPSGetAndPost() throws {
        let (service, certificates) = try startHTTPSService()
        defer { certificates.remove() }
        let port = try XCTUnwrap(service.port)
        let common = [
            "@127.0.0.1", "-p", "\(port)", "+tls-ca=\(certificates.caCertificatePath)", "+tls-hostname=localhost",
            "+timeout=5", "+retry=0",
        ]
        for (method, session) in [("+https", "HTTP/2-POST"), ("+https-get", "HTTP/2-GET")] {
            let answer = try run("/usr/bin/kdig", [method] + common + ["www.example.test", "A"])
            XCTAssertEqual(answer.status, 0, answer.output + answer.errors)
            XCTAssertTrue(answer.output.contains("status: NOERROR"), answer.output + answer.errors)
            XCTAssertTrue(answer.output.contains("192.0.2.1"), answer.output)
            XCTAssertTrue(answer.output.contains("HTTP session (\(session))"), "kdig names the transport: \(answer.output)")
        }
        let missing = try run("/usr/bin/kdig", ["+https"] + common + ["nowhere.example.test", "A"])
        XCTAssertTrue(missing.output.contains("status: NXDOMAIN"), missing.output + missing.errors)
    }

    /// dnsperf exits 0 even when it sent nothing, so its statistics are read: queries went out and
    /// none was lost. dnsperf 2.10's DoH client keeps one response per TLS read: when the server
    /// answers two streams in one write (as an event loop does), it counts one as lost; so it runs
    /// with one query outstanding.
    func testDnsperfDoHSendsAndLosesNothing() throws {
        let (service, certificates) = try startHTTPSService()
        defer { certificates.remove() }
        let port = try XCTUnwrap(service.port)
        let data = certificates.directory.appendingPathComponent("queries.txt")
        try Data("www.example.test A\nV4Only.example.test A\nwww.example.test AAAA\nnowhere.example.test A\n".utf8).write(to: data)
        let result = try run("/usr/bin/dnsperf", [
            "-m", "doh", "-s", "127.0.0.1", "-p", "\(port)", "-d", data.path, "-n", "50", "-c", "1", "-q", "1", "-t", "5",
            "-O", "doh-uri=https://127.0.0.1:\(port)/dns-query",
        ], seconds: 60)
        XCTAssertEqual(result.status, 0, result.output + result.errors)
        func statistic(_ name: String) -> Int? {
            guard let line = result.output.split(separator: "\n").first(where: { $0.contains(name) }) else { return nil }
            return line.split(separator: " ").compactMap { Int($0) }.first
        }
        let sent = try XCTUnwrap(statistic("Queries sent:"), result.output)
        XCTAssertEqual(sent, 200, result.output)
        XCTAssertEqual(statistic("Queries lost:"), 0, result.output)
        XCTAssertTrue(result.output.contains("NXDOMAIN"), result.output)
    }

    func testCurlOverHTTP11HTTP2AndH2C() throws {
        let (service, certificates) = try startHTTPSService { configuration in
            configuration.listeners.append(HTTPDNSService.Listener())
        }
        defer { certificates.remove() }
        let ports = service.ports
        XCTAssertEqual(ports.count, 2)
        let query = DoHWireFormat.base64URL(DNSMessage.query(name: try DNSName("www.example.test"), type: .A))
        let tls = "https://localhost:\(ports[0])/dns-query?dns=\(query)"
        let plain = "http://127.0.0.1:\(ports[1])/dns-query?dns=\(query)"
        let trust = ["--cacert", certificates.caCertificatePath, "--resolve", "localhost:\(ports[0]):127.0.0.1"]
        let cases: [([String], String)] = [
            (trust + ["--http1.1", tls], "1.1"),
            (trust + ["--http2", tls], "2"),
            (["--http2-prior-knowledge", plain], "2"),
            (["--http1.1", plain], "1.1"),
        ]
        for (arguments, version) in cases {
            let result = try run("/usr/bin/curl", [
                "-sS", "--noproxy", "*", "--max-time", "10", "-o", "/dev/null", "-w", "%{http_code} %{http_version} %{content_type}",
            ] + arguments)
            XCTAssertEqual(result.status, 0, result.errors)
            XCTAssertEqual(result.output, "200 \(version) application/dns-message", "\(arguments)")
        }
        let health = try run("/usr/bin/curl", ["-sS", "--noproxy", "*", "--http2-prior-knowledge", "http://127.0.0.1:\(ports[1])/health"])
        XCTAssertEqual(health.output, "alive\n")
        let ready = try run("/usr/bin/curl", ["-sS", "--noproxy", "*", "--http2-prior-knowledge", "http://127.0.0.1:\(ports[1])/ready"])
        XCTAssertEqual(ready.output, "ready\n")
    }
}
