import Foundation
import HTTPDNSCore
import HTTPDNSTestSupport
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// `httpdns demo` (what `make demo` runs): it shows both sides and leaves nothing running.
final class DemoCommandTests: ToolTestCase {
    func testDemoShowsTheHijackAndTheProtectedFetchThenStopsEverything() throws {
        let result = try run(["demo"])
        let output = result.stdoutText
        XCTAssertEqual(result.status, 0, result.stderrText + output)

        // Unprotected: LocalDNS's lie, a certificate that does not verify, the ad page over HTTP.
        XCTAssertTrue(output.contains("www.demo.test -> 127.0.0.3"), output)
        XCTAssertTrue(output.contains("certificate did NOT verify for www.demo.test"), output)
        XCTAssertTrue(output.contains("BUY NOW! Hijacked page for news.demo.test"), output)
        // Protected: the HTTPDNS address, SNI and verification on the real name, the real pages.
        XCTAssertTrue(output.contains("www.demo.test -> 127.0.0.2"), output)
        XCTAssertTrue(output.contains("SNI pay.demo.test, certificate verified"), output)
        XCTAssertTrue(output.contains("\"www.demo.test: the real site, reached at 127.0.0.2 with SNI www.demo.test\""), output)
        XCTAssertTrue(output.contains("today's real news, from 127.0.0.2"), output)
        XCTAssertEqual(output.components(separatedBy: "HIJACKED").count - 1, 3, "the check flags all three names")
        XCTAssertEqual(output.components(separatedBy: "confirmed by connecting").count - 1, 2, "both HTTPS names confirmed")
        XCTAssertTrue(output.contains("Everything the demo started has been stopped."), output)

        // Nothing it started still listens: the origin's ports and LocalDNS's port are free again.
        let ports = Self.ports(in: output)
        XCTAssertFalse(ports.isEmpty, "no ports in the output")
        for (address, port) in ports {
            XCTAssertFalse(Nginx.isListening(HTTPDNSIPAddress(address)!, port: port), "\(address):\(port) still listening")
        }
    }

    func testDemoRejectsArguments() throws {
        let result = try run(["demo", "--bogus"])
        XCTAssertEqual(result.status, 64)
    }

    /// `https://www.demo.test:PORT/` and `http://news.demo.test:PORT/` → the origin's address and port.
    static func ports(in output: String) -> [(String, UInt16)] {
        var found: [(String, UInt16)] = []
        for line in output.split(separator: "\n") {
            if line.hasPrefix("http"), let url = URL(string: String(line)), let port = url.port {
                found.append(("127.0.0.2", UInt16(port)))
                found.append(("127.0.0.3", UInt16(port)))
            }
            // dnsmasq listens on TCP as well as UDP: "via     udp 127.0.0.4:PORT (the system's resolver)".
            if let range = line.range(of: "udp 127.0.0.4:"),
               let port = UInt16(line[range.upperBound...].prefix { $0.isNumber }) {
                found.append(("127.0.0.4", port))
            }
        }
        return found
    }
}
