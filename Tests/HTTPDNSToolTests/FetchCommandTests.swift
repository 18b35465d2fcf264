import Foundation
import HTTPDNSCore
import HTTPDNSTestSupport
import XCTest

/// `httpdns fetch` of loopback origins reached by name, the name resolved by a loopback HTTPDNS
/// service (the system resolver knows nothing of `*.example.test`, so success proves pinning).
final class FetchCommandTests: ToolTestCase {
    var origin: TestHTTPServer!
    var provider: [String] = []

    override func setUpWithError() throws {
        try super.setUpWithError()
        origin = try TestHTTPServer()
        let server = origin!
        addCleanup { server.stop() }
        provider = try dnspod(zone: #"{"origin.example.test": {"A": ["127.0.0.1"]}, "dead.example.test": {"A": ["127.0.0.1"]}}"#)
    }

    var base: String { "http://origin.example.test:\(origin.port)" }

    func testBodyToStdoutWithRealHostHeader() throws {
        let result = try run(["fetch"] + provider + ["\(base)/bytes?n=5000"])
        XCTAssertEqual(result.status, 0, result.stderrText)
        XCTAssertEqual(result.stdout, Data(repeating: UInt8(ascii: "x"), count: 5000))
        XCTAssertEqual(origin.requests.last?.header("Host"), "origin.example.test:\(origin.port)")
    }

    func testIncludeHeadAndCustomHeaders() throws {
        let result = try run(["fetch", "-i", "-H", "X-Custom: hello there"] + provider + ["\(base)/echo"])
        XCTAssertEqual(result.status, 0, result.stderrText)
        XCTAssertTrue(result.stdoutText.hasPrefix("HTTP/1.1 200 OK\r\n"), result.stdoutText)
        XCTAssertTrue(result.stdoutText.contains("X-Echo-Host: origin.example.test:\(origin.port)\r\n"), result.stdoutText)
        XCTAssertTrue(result.stdoutText.contains("X-Echo-X-Custom: hello there\r\n"), result.stdoutText)
        XCTAssertEqual(origin.requests.last?.header("X-Custom"), "hello there")
    }

    func testPostWithData() throws {
        let result = try run(["fetch", "-X", "POST", "-d", "a=1", "-d", "b=2"] + provider + ["\(base)/echo"])
        XCTAssertEqual(result.status, 0, result.stderrText)
        XCTAssertEqual(result.stdoutText, "a=1&b=2")
        let request = try XCTUnwrap(origin.requests.last)
        XCTAssertEqual(request.method, "POST")
        XCTAssertEqual(request.header("Content-Type"), "application/x-www-form-urlencoded")
    }

    func testDataBinaryStreamsTheFile() throws {
        let directory = try temporaryDirectory()
        let file = directory.appendingPathComponent("upload.bin")
        let payload = Data((0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) })
        try payload.write(to: file)
        let result = try run(["fetch", "--data-binary", "@\(file.path)", "-H", "Content-Type: application/octet-stream"]
            + provider + ["\(base)/echo"])
        XCTAssertEqual(result.status, 0, result.stderrText)
        XCTAssertEqual(result.stdout, payload)
        let request = try XCTUnwrap(origin.requests.last)
        XCTAssertEqual(request.method, "POST")
        XCTAssertEqual(request.header("Content-Length"), "300000")
        XCTAssertEqual(request.body, payload)
    }

    func testOutputFileIsWrittenWhole() throws {
        let directory = try temporaryDirectory()
        let target = directory.appendingPathComponent("out.bin")
        let result = try run(["fetch", "-o", target.path] + provider + ["\(base)/chunked?n=100000"])
        XCTAssertEqual(result.status, 0, result.stderrText)
        XCTAssertTrue(result.stdout.isEmpty)
        XCTAssertEqual(try Data(contentsOf: target), Data(repeating: UInt8(ascii: "y"), count: 100_000))
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: directory.path), ["out.bin"])
    }

    /// `-o` to something that is not a regular file (a FIFO here; `/dev/null` in real use) writes into
    /// it: renaming a temporary file over it would replace the device or pipe with a file.
    func testOutputToAPipeWritesIntoIt() throws {
        let directory = try temporaryDirectory()
        let fifo = directory.appendingPathComponent("pipe").path
        XCTAssertEqual(mkfifo(fifo, 0o600), 0)
        let received = HTTPDNSLock(Data())
        let reader = Thread {
            guard let handle = FileHandle(forReadingAtPath: fifo) else { return }
            let data = handle.readDataToEndOfFile()
            received.withLock { $0 = data }
        }
        reader.start()
        let result = try run(["fetch", "-o", fifo] + provider + ["\(base)/bytes?n=3000"])
        XCTAssertEqual(result.status, 0, result.stderrText)
        let deadline = Date().addingTimeInterval(5)
        while received.withLock({ $0.isEmpty }), Date() < deadline { usleep(10_000) }
        XCTAssertEqual(received.withLock { $0 }, Data(repeating: UInt8(ascii: "x"), count: 3000))
        var info = stat()
        XCTAssertEqual(stat(fifo, &info), 0)
        XCTAssertEqual(info.st_mode & S_IFMT, S_IFIFO, "the pipe is still a pipe")
    }

    func testOutputThroughASymlinkReplacesTheFileItNames() throws {
        let directory = try temporaryDirectory()
        let target = directory.appendingPathComponent("real.txt").path
        let link = directory.appendingPathComponent("link.txt").path
        try Data("old".utf8).write(to: URL(fileURLWithPath: target))
        XCTAssertEqual(symlink(target, link), 0)
        let result = try run(["fetch", "-o", link] + provider + ["\(base)/bytes?n=10"])
        XCTAssertEqual(result.status, 0, result.stderrText)
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: target)), Data(repeating: UInt8(ascii: "x"), count: 10))
        XCTAssertEqual(try FileManager.default.destinationOfSymbolicLink(atPath: link), target, "the link is still a link")
    }

    func testFailedTransferLeavesOutputFileUntouched() throws {
        let directory = try temporaryDirectory()
        let target = directory.appendingPathComponent("keep.txt")
        try Data("old".utf8).write(to: target)
        let port = try closedPort()
        let result = try run(["fetch", "-o", target.path] + provider + ["http://dead.example.test:\(port)/"])
        assertFailure(result)
        XCTAssertEqual(try String(contentsOf: target, encoding: .utf8), "old")
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: directory.path), ["keep.txt"])
    }

    func testInterruptedTransferLeavesNoOutputFile() throws {
        let directory = try temporaryDirectory()
        let target = directory.appendingPathComponent("never.bin")
        let fetch = try runner.start(["fetch", "-o", target.path] + provider + ["\(base)/endless?chunk=4096&delayms=20"])
        let deadline = ContinuousClock.now + .seconds(30)
        while origin.endlessChunksSent < 5, fetch.isRunning, ContinuousClock.now < deadline { usleep(10_000) }
        XCTAssertGreaterThanOrEqual(origin.endlessChunksSent, 5, "the transfer never got going")
        fetch.send(SIGTERM)
        XCTAssertEqual(try fetch.wait(timeout: .seconds(30)), 1, String(decoding: fetch.stderr, as: UTF8.self))
        XCTAssertTrue(String(decoding: fetch.stderr, as: UTF8.self).hasPrefix("httpdns: error: interrupted"))
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: directory.path), [])
    }

    func testRefusedAddressFailsWithOneLine() throws {
        let port = try closedPort()
        let result = try run(["fetch"] + provider + ["http://dead.example.test:\(port)/"])
        assertFailure(result)
        XCTAssertTrue(result.stderrText.contains("dead.example.test"), result.stderrText)
        XCTAssertTrue(result.stderrText.contains("127.0.0.1"), result.stderrText)
    }

    func testUnresolvableHostFails() throws {
        let result = try run(["fetch"] + provider + ["http://nowhere.example.test:\(origin.port)/"])
        assertFailure(result)
        XCTAssertTrue(result.stderrText.contains("cannot resolve nowhere.example.test"), result.stderrText)
    }

    func testFollowRedirectsSwitchesToGet() throws {
        let result = try run(["fetch", "-L", "-i", "-d", "payload"] + provider + ["\(base)/redirect"])
        XCTAssertEqual(result.status, 0, result.stderrText)
        XCTAssertTrue(result.stdoutText.hasPrefix("HTTP/1.1 302 Found\r\n"), result.stdoutText)
        XCTAssertTrue(result.stdoutText.contains("X-Echo-Method: GET\r\n"), result.stdoutText)
        let methods = origin.requests.map { "\($0.method) \($0.path)" }
        XCTAssertEqual(methods, ["POST /redirect", "GET /echo"])
        XCTAssertEqual(origin.requests.last?.body.count, 0)
    }

    func testWithoutFollowTheRedirectIsTheResult() throws {
        let result = try run(["fetch", "-i"] + provider + ["\(base)/redirect"])
        XCTAssertEqual(result.status, 0, result.stderrText)
        XCTAssertTrue(result.stdoutText.hasPrefix("HTTP/1.1 302 Found\r\n"), result.stdoutText)
        XCTAssertEqual(origin.requests.count, 1)
    }

    func testVerboseTellsProviderAddressAndSNI() throws {
        let result = try run(["fetch", "-v"] + provider + ["\(base)/echo"])
        XCTAssertEqual(result.status, 0, result.stderrText)
        XCTAssertTrue(result.stderrText.contains("* resolved origin.example.test via dnspod http://127.0.0.1:"), result.stderrText)
        XCTAssertTrue(result.stderrText.contains("* connected to 127.0.0.1 port \(origin.port)"), result.stderrText)
    }

    func testHTTPErrorStatusSucceedsUnlessFail() throws {
        // The HTTPDNS service itself is an origin that answers 400 to a DNSPod request without `dn`.
        let service = try XCTUnwrap(URL(string: try startService(zone: "{}")))
        let port = try XCTUnwrap(service.port)
        let url = "http://svc.example.test:\(port)/d"
        let arguments = ["--resolve", "svc.example.test:\(port):127.0.0.1"] + provider
        let plain = try run(["fetch", "-i"] + arguments + [url])
        XCTAssertEqual(plain.status, 0, plain.stderrText)
        XCTAssertTrue(plain.stdoutText.hasPrefix("HTTP/1.1 4"), plain.stdoutText)
        let failing = try run(["fetch", "-f"] + arguments + [url])
        assertFailure(failing)
        XCTAssertTrue(failing.stderrText.contains("HTTP status 4"), failing.stderrText)
    }

    func testBlockRedirectEndpointIsAskedWhenTheHostCannotBeResolved() throws {
        let redirect = try startService(zone: #"{"blocked.example.test": {"A": ["127.0.0.1"]}}"#)
        let url = "http://blocked.example.test:\(origin.port)/echo"
        let without = try run(["fetch"] + provider + [url])
        assertFailure(without)
        let with = try run(["fetch", "-i", "--fallback-ips", "\(redirect)/ips"] + provider + [url])
        XCTAssertEqual(with.status, 0, with.stderrText)
        XCTAssertTrue(with.stdoutText.contains("X-Echo-Host: blocked.example.test:\(origin.port)\r\n"), with.stdoutText)
    }

    func testHTTPSVerifiesTheRealNameWithCacert() throws {
        let certificates = try TestCertificates()
        addCleanup { certificates.remove() }
        let leaf = try certificates.issue(dnsNames: ["secure.example.test"])
        let secure = try TestHTTPServer(tls: leaf)
        addCleanup { secure.stop() }
        let tlsProvider = try dnspod(zone: #"{"secure.example.test": {"A": ["127.0.0.1"]}, "other.example.test": {"A": ["127.0.0.1"]}}"#)

        let verified = try run(["fetch", "-v", "--cacert", certificates.caCertificatePath] + tlsProvider
            + ["https://secure.example.test:\(secure.port)/bytes?n=3"])
        XCTAssertEqual(verified.status, 0, verified.stderrText)
        XCTAssertEqual(verified.stdoutText, "xxx")
        XCTAssertTrue(verified.stderrText.contains("SNI sent: secure.example.test; certificate verified"), verified.stderrText)

        let untrusted = try run(["fetch"] + tlsProvider + ["https://secure.example.test:\(secure.port)/"])
        assertFailure(untrusted)
        XCTAssertTrue(untrusted.stderrText.contains("certificate"), untrusted.stderrText)

        let wrongName = try run(["fetch", "--cacert", certificates.caCertificatePath] + tlsProvider
            + ["https://other.example.test:\(secure.port)/"])
        assertFailure(wrongName)
        XCTAssertTrue(wrongName.stderrText.contains("certificate for other.example.test"), wrongName.stderrText)
    }
}
