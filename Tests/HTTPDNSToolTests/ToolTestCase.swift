import Foundation
import HTTPDNSCore
import HTTPDNSServer
import HTTPDNSTestSupport
import HTTPServing
import XCTest

/// Shared set-up for tests of the `httpdns` binary: the runner, and loopback HTTPDNS services
/// started on port 0 (stopped at tear-down).
class ToolTestCase: XCTestCase {
    var runner: ToolRunner!
    private var services: [HTTPDNSService] = []
    private var cleanups: [() -> Void] = []

    override func setUpWithError() throws {
        runner = try ToolRunner()
    }

    override func tearDown() {
        for service in services { service.stop() }
        services = []
        for cleanup in cleanups.reversed() { cleanup() }
        cleanups = []
    }

    /// Runs the binary.
    func run(_ arguments: [String], file: StaticString = #filePath, line: UInt = #line) throws -> ToolRunner.Result {
        try runner.run(arguments)
    }

    /// Starts an HTTPDNS service on 127.0.0.1:0 answering `zone` (JSON text) and returns its base URL.
    func startService(zone: String) throws -> String {
        var configuration = HTTPDNSService.Configuration()
        configuration.zone = try HTTPDNSZone(json: Data(zone.utf8))
        let service = HTTPDNSService(configuration: configuration)
        try service.start()
        services.append(service)
        let port = try XCTUnwrap(service.port, "HTTPDNS service has no port")
        return "http://127.0.0.1:\(port)"
    }

    /// A DNSPod provider argument for a service started with ``startService(zone:)``.
    func dnspod(zone: String) throws -> [String] {
        ["--provider", "dnspod=" + (try startService(zone: zone)), "--allow-private", "--httpdns-only"]
    }

    /// A dnsmasq on loopback (a lying or honest LocalDNS), stopped at tear-down.
    func dnsmasq(_ configure: (inout Dnsmasq.Configuration) -> Void) throws -> Dnsmasq {
        var configuration = Dnsmasq.Configuration()
        configure(&configuration)
        let server = try Dnsmasq(configuration)
        addCleanup { server.stop() }
        return server
    }

    /// A file in a fresh temporary directory removed at tear-down.
    func temporaryDirectory() throws -> URL {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("httpdns-tooltest-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        addCleanup { try? FileManager.default.removeItem(at: directory) }
        return directory
    }

    func addCleanup(_ cleanup: @escaping () -> Void) {
        cleanups.append(cleanup)
    }

    /// A port nothing listens on: bound by a server that is then stopped.
    func closedPort() throws -> Int {
        let server = try HTTPServer(configuration: .init()) { _ in .text("") }
        let port = server.port
        server.stop()
        return port
    }

    /// Asserts a failure: status 1 and exactly one `httpdns: error:` line on stderr.
    func assertFailure(_ result: ToolRunner.Result, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(result.status, 1, "stderr: \(result.stderrText)", file: file, line: line)
        XCTAssertEqual(result.stderrLines.count, 1, "stderr: \(result.stderrText)", file: file, line: line)
        XCTAssertTrue(result.stderrText.hasPrefix("httpdns: error: "), result.stderrText, file: file, line: line)
    }

    /// Asserts a usage error: status 64, an error line and a hint to `--help`.
    func assertUsage(_ result: ToolRunner.Result, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(result.status, 64, "stderr: \(result.stderrText)", file: file, line: line)
        XCTAssertTrue(result.stderrText.hasPrefix("httpdns: error: "), result.stderrText, file: file, line: line)
        XCTAssertTrue(result.stderrText.contains("--help"), result.stderrText, file: file, line: line)
        XCTAssertTrue(result.stdout.isEmpty, "stdout: \(result.stdoutText)", file: file, line: line)
    }

    /// Parses one JSON object line.
    func jsonObject(_ line: String, file: StaticString = #filePath, line testLine: UInt = #line) throws -> [String: Any] {
        let object = try JSONSerialization.jsonObject(with: Data(line.utf8))
        return try XCTUnwrap(object as? [String: Any], "not a JSON object: \(line)", file: file, line: testLine)
    }
}
