import Foundation
import HTTPDNSCore
import HTTPDNSTestSupport
import XCTest

/// `httpdns serve` deployed behind nginx, as httpdns-serve(8)'s "Behind a balancer" tells an operator: nginx
/// speaks HTTP/2 over TLS to clients and HTTP/1.1 to the server, and passes the client's address in
/// `X-Forwarded-For`; the server believes it only from the `--trusted-proxy` it was given.
///
/// The client connects from 127.0.0.9 and nginx from 127.0.0.1, so the address the server reports
/// tells which one it believed.
final class ServeBehindNginxTests: ToolTestCase {
    private static let client = "127.0.0.9"

    private struct Deployment {
        var server: RunningTool
        var nginx: Nginx
        var accessLog: URL
        var caPath: String
    }

    /// Starts `httpdns serve` (with `serveArguments` added) and nginx in front of it.
    private func deploy(_ serveArguments: [String], certificates: TestCertificates) throws -> Deployment {
        let directory = try temporaryDirectory()
        let zone = directory.appendingPathComponent("zone.json")
        try Data(#"{"www.example.test": {"A": ["192.0.2.10"], "ttl": 60}}"#.utf8).write(to: zone)
        let accessLog = directory.appendingPathComponent("access.log")
        let server = try runner.start(
            ["serve", "--listen", "127.0.0.1:0", "--zone", zone.path, "--access-log", accessLog.path] + serveArguments)
        let line = try server.waitForLine(startingWith: "listening on ")
        let backend = String(line.dropFirst("listening on ".count))
        let leaf = try certificates.issue(dnsNames: ["localhost"])
        // The client's own address replaces whatever X-Forwarded-For it sent: nothing it says is passed on.
        let location = Nginx.Location(
            "/", .proxy(backend), directives: ["proxy_set_header X-Forwarded-For $remote_addr"])
        let nginx = try Nginx(Nginx.Configuration(virtualHosts: [Nginx.VirtualHost(["localhost"], tls: leaf, locations: [location])]))
        return Deployment(server: server, nginx: nginx, accessLog: accessLog, caPath: certificates.caCertificatePath)
    }

    /// curl from 127.0.0.9 to nginx over HTTP/2; returns the body and the HTTP version curl used.
    private func fetch(_ deployment: Deployment, _ path: String, headers: [String] = []) throws -> (body: String, version: String) {
        let port = try XCTUnwrap(deployment.nginx.httpsPort)
        let marker = "\n--http-version:"
        let arguments = [
            "-sS", "--max-time", "10", "--noproxy", "*", "--http2", "--interface", Self.client,
            "--cacert", deployment.caPath, "--resolve", "localhost:\(port):127.0.0.1", "-w", "\(marker)%{http_version}",
        ] + headers.flatMap { ["-H", $0] } + ["https://localhost:\(port)\(path)"]
        let curl = try RunningTool(executable: URL(fileURLWithPath: "/usr/bin/curl"), arguments: arguments)
        let status = try curl.wait(timeout: .seconds(30))
        let output = String(decoding: curl.stdout, as: UTF8.self)
        XCTAssertEqual(status, 0, String(decoding: curl.stderr, as: UTF8.self) + deployment.nginx.errorLog)
        let parts = output.components(separatedBy: marker)
        return (parts[0], parts.count > 1 ? parts[1] : "")
    }

    private func clientIP(_ body: String) throws -> String? {
        let object = try JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any]
        return object?["client_ip"] as? String
    }

    /// The access log's client of each line.
    private func loggedClients(_ file: URL) throws -> [String] {
        let deadline = Date().addingTimeInterval(5)
        var lines: [Substring] = []
        while Date() < deadline {
            lines = ((try? String(contentsOf: file, encoding: .utf8)) ?? "").split(separator: "\n")
            if !lines.isEmpty { break }
            usleep(20_000)
        }
        return try lines.map { line in
            let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
            return try XCTUnwrap(object?["client"] as? String, "no client in \(line)")
        }
    }

    func testTheClientAddressCrossesATrustedNginxOverHTTP2() throws {
        let certificates = try TestCertificates()
        defer { certificates.remove() }
        let deployment = try deploy(["--trusted-proxy", "127.0.0.1/32"], certificates: certificates)
        defer {
            deployment.nginx.stop()
            assertStopsCleanly(deployment.server)
        }
        let answer = try fetch(deployment, "/100000/d?host=www.example.test")
        XCTAssertEqual(answer.version, "2", "nginx should speak HTTP/2 to the client")
        XCTAssertEqual(try clientIP(answer.body), Self.client, answer.body)
        XCTAssertTrue(answer.body.contains("192.0.2.10"), answer.body)
        // A client cannot choose its address: nginx overwrites X-Forwarded-For with what it saw.
        let forged = try fetch(deployment, "/100000/d?host=www.example.test", headers: ["X-Forwarded-For: 203.0.113.5"])
        XCTAssertEqual(try clientIP(forged.body), Self.client, forged.body)
        // DNSPod's clientip=1 reports the same address.
        let dnspod = try fetch(deployment, "/d?dn=www.example.test&clientip=1")
        XCTAssertTrue(dnspod.body.hasSuffix("|\(Self.client)"), dnspod.body)
        XCTAssertEqual(try loggedClients(deployment.accessLog), [Self.client, Self.client, Self.client])
    }

    func testWithoutTrustTheServerReportsNginxAndIgnoresTheHeader() throws {
        let certificates = try TestCertificates()
        defer { certificates.remove() }
        let deployment = try deploy([], certificates: certificates)
        defer {
            deployment.nginx.stop()
            assertStopsCleanly(deployment.server)
        }
        let answer = try fetch(deployment, "/100000/d?host=www.example.test")
        XCTAssertEqual(try clientIP(answer.body), "127.0.0.1", "an untrusted balancer's header must not be believed: \(answer.body)")
        XCTAssertEqual(try loggedClients(deployment.accessLog), ["127.0.0.1"])
    }
}
