#if canImport(Glibc)
import Glibc
#endif
import Foundation
import HTTPDNSCore
import HTTPDNSTestSupport
import XCTest

/// The demo's stub scene (issue 23): while the carrier's resolver lies, getent, dig and curl with
/// no proxy and no library get the true address and the real pages through `httpdns stub`, whose
/// --check calls the wiring protected; the stub is stopped with the rest.
final class DemoStubSceneTests: ToolTestCase {
    func testGetentDigAndCurlReachTheRealSiteThroughTheStub() throws {
        let result = try run(["demo"])
        XCTAssertEqual(result.status, 0, result.stderrText + result.stdoutText)
        let output = result.stdoutText
        let scene = try XCTUnwrap(output.range(of: "httpdns stub — programs with no proxy and no library").map { String(output[$0.lowerBound...]) }, output)
        let lines = scene.split(separator: "\n").map(String.init)
        func after(_ command: String) -> String? {
            lines.firstIndex { $0.hasPrefix("  $ \(command)") }.flatMap { $0 + 1 < lines.count ? lines[$0 + 1] : nil }
        }
        XCTAssertEqual(lines.firstIndex { $0.hasPrefix("  the carrier's resolver:") }.map { lines[$0 + 1] }, "    127.0.0.3", "the carrier still lies")
        guard geteuid() == 0 else {
            XCTAssertTrue(scene.contains("not root, or port 53 taken"), scene)
            XCTAssertEqual(after("dig @127.0.0.6"), "    127.0.0.2", scene)
            return
        }
        XCTAssertEqual(after("getent hosts www.demo.test"), "    127.0.0.2       www.demo.test", scene)
        XCTAssertEqual(after("dig +short www.demo.test"), "    127.0.0.2", scene)
        XCTAssertEqual(after("curl --cacert demo-ca.pem https://www.demo.test:"), "    www.demo.test: the real site, reached at 127.0.0.2 with SNI www.demo.test", scene)
        XCTAssertEqual(after("curl http://news.demo.test:"), "    news.demo.test: today's real news, from 127.0.0.2", scene)
        XCTAssertTrue(scene.contains("    protected: every name goes to httpdns stub at 127.0.0.6:53\n"), scene)
        XCTAssertFalse(Nginx.isListening(HTTPDNSIPAddress("127.0.0.6")!, port: 53), "the stub stopped with the demo")
    }
}
