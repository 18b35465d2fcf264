import Foundation
import HTTPDNSCore
import HTTPDNSTestSupport
import XCTest

/// The launcher itself: errors that name the fix, a plain-HTTP host, the access log, stopping.
final class NginxLauncherTests: XCTestCase {
    func testMissingNginxNamesTheDebianPackage() {
        var configuration = Nginx.Configuration(virtualHosts: [.init(["a.test"], locations: [.text("/", "a")])])
        configuration.executable = "/nonexistent/nginx"
        XCTAssertThrowsError(try Nginx(configuration)) { error in
            let failure = error as? Nginx.Failure
            XCTAssertEqual(failure?.code, .notInstalled)
            XCTAssertTrue(failure?.description.contains("nginx-light") == true, "\(error)")
        }
    }

    func testConfigurationThatWouldBreakTheFileIsRejected() {
        for host in [
            Nginx.VirtualHost(["a.test; include /etc/passwd"]),
            Nginx.VirtualHost([""]),
            Nginx.VirtualHost(["a.test"], locations: [.text("no-slash", "x")]),
            Nginx.VirtualHost(["a.test"], locations: [.text("/{", "x")]),
            Nginx.VirtualHost(["a.test"], locations: [.redirect("/", to: "/b", status: 200)]),
        ] {
            XCTAssertThrowsError(try Nginx(.init(virtualHosts: [host]))) { error in
                XCTAssertEqual((error as? Nginx.Failure)?.code, .invalidConfiguration, "\(error)")
            }
        }
        XCTAssertThrowsError(try Nginx(.init(virtualHosts: []))) { error in
            XCTAssertEqual((error as? Nginx.Failure)?.code, .invalidConfiguration)
        }
    }

    func testNginxRejectingItsConfigReportsItsErrorLog() {
        var configuration = Nginx.Configuration(virtualHosts: [.init(["a.test"], locations: [.text("/", "a")])])
        configuration.httpDirectives = ["no_such_directive on"]
        XCTAssertThrowsError(try Nginx(configuration)) { error in
            XCTAssertEqual((error as? Nginx.Failure)?.code, .exitedAtStart)
            XCTAssertTrue("\(error)".contains("no_such_directive"), "\(error)")
        }
    }

    func testServesPlainHTTPLogsAndStops() async throws {
        let nginx = try Nginx(.init(virtualHosts: [
            .init(["plain.test"], address: Bed.origin, locations: [
                .text("/", "quote \" backslash \\ tab\t end", headers: [Bed.header("X-Test", "yes")]),
            ]),
        ]))
        let port = try XCTUnwrap(nginx.httpPort)
        XCTAssertNil(nginx.httpsPort)
        let output = try curl(["-s", "-i", "-H", "Host: plain.test", "http://\(Bed.origin):\(port)/x?y=1"])
        XCTAssertTrue(output.contains("X-Test: yes"), output)
        XCTAssertTrue(output.hasSuffix("quote \" backslash \\ tab\t end"), output)
        let logged = await nginx.accessLog(atLeast: 1)
        let entry = try XCTUnwrap(logged.first)
        XCTAssertEqual(entry.serverName, "plain.test")
        XCTAssertEqual(entry.uri, "/x?y=1")
        XCTAssertEqual(entry.host, "plain.test")
        XCTAssertEqual(entry.sni, "")
        XCTAssertTrue(entry.completed)
        XCTAssertEqual(entry.httpProtocol, "HTTP/1.1")

        let directory = nginx.directory
        nginx.stop()
        XCTAssertFalse(Nginx.isListening(Bed.origin, port: port), "the port is closed after stop()")
        XCTAssertFalse(FileManager.default.fileExists(atPath: directory.path))
        nginx.stop()
    }

    private func curl(_ arguments: [String]) throws -> String {
        let process = try RunningTool(executable: URL(fileURLWithPath: "/usr/bin/curl"), arguments: arguments)
        _ = try process.wait(timeout: .seconds(60))
        return String(decoding: process.stdout, as: UTF8.self)
    }
}
