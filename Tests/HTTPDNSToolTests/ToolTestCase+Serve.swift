import Foundation
import HTTPDNSServer
import HTTPDNSTestSupport
import HTTPServing
import XCTest

/// `httpdns serve` as a daemon in tests: started, its listeners read from stdout, and stopped with
/// the checks every daemon test makes (exit 0 on SIGTERM, no sanitizer report on stderr).
extension ToolTestCase {
    /// Starts `httpdns serve` with `arguments` and waits until it has printed `count` listeners.
    /// - Returns: the process and the listeners' URLs (`http(s)://127.0.0.1:PORT`), in order.
    func startServe(_ arguments: [String], listeners count: Int = 1) throws -> (server: RunningTool, urls: [String]) {
        let server = try runner.start(["serve"] + arguments)
        _ = try server.waitForLine(startingWith: "listening on ")
        var urls: [String] = []
        let printed = pollUntilBlocking(within: .seconds(30)) {
            urls = String(decoding: server.stdout, as: UTF8.self).split(separator: "\n")
                .filter { $0.hasPrefix("listening on ") }.map { String($0.dropFirst("listening on ".count)) }
            return urls.count >= count
        }
        guard printed else { throw ToolRunner.Failure("serve printed \(urls.count) of \(count) listeners") }
        return (server, urls)
    }

    /// A DNSPod upstream that holds every request at the returned gate until the test opens it
    /// (then it answers `93.184.216.34,60`): the way serve's tests keep requests in flight.
    func heldUpstream() throws -> (upstream: HTTPServer, gate: TestGate) {
        let gate = TestGate()
        let upstream = try HTTPServer { _ in
            gate.wait()
            return .text("93.184.216.34,60")
        }
        return (upstream, gate)
    }

    /// The port of a listener URL.
    func port(of url: String) throws -> Int {
        try XCTUnwrap(url.split(separator: ":").last.flatMap { Int($0) }, "no port in \(url)")
    }

    /// Sends SIGTERM (unless the process has exited, or `signalled` says the test sent it) and
    /// asserts a clean stop: exit status 0 within `timeout`, and no sanitizer report on stderr (a
    /// report inside a child is otherwise seen by nobody). A second SIGTERM is not sent to a
    /// process already draining: once the drain is over the default action is back, and it would
    /// end the process (143) on its way out.
    func assertStopsCleanly(
        _ server: RunningTool, signalled: Bool = false, within timeout: Duration = .seconds(30),
        file: StaticString = #filePath, line: UInt = #line
    ) {
        if !signalled { server.send(SIGTERM) }
        let status: Int32?
        do {
            status = try server.wait(timeout: timeout)
        } catch {
            status = nil
            XCTFail("\(error)", file: file, line: line)
        }
        let stderr = String(decoding: server.stderr, as: UTF8.self)
        XCTAssertEqual(status, 0, "exit status on SIGTERM; stderr:\n\(stderr)", file: file, line: line)
        XCTAssertEqual(server.sanitizerReports, [], "sanitizer reports:\n\(stderr)", file: file, line: line)
    }
}
