#if canImport(Glibc)
import Glibc
#endif
import DNSWire
import Foundation
import HTTPDNSCore
import HTTPDNSTestSupport
import XCTest

/// `httpdns stub` under systemd's protocols without systemd running: socket activation through
/// `systemd-socket-activate` (its sockets, not `--listen`) and `READY=1`/`STOPPING=1` on a notify
/// socket the test binds (a path, and an abstract name).
final class StubSystemdTests: ToolTestCase {
    static let activate = "/usr/bin/systemd-socket-activate"

    /// A hosts file answering act.test, and a blackholed upstream: answers need no network.
    func hostsFile() throws -> String {
        let path = try temporaryDirectory().appendingPathComponent("hosts").path
        try "10.9.9.9 act.test\n".write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    func requireActivate() throws {
        guard FileManager.default.isExecutableFile(atPath: Self.activate) else {
            XCTFail("\(Self.activate) not found: install the Debian package systemd (scripts/ensure-deps.sh)")
            throw ToolRunner.Failure("systemd-socket-activate missing")
        }
    }

    /// (c) Two nested activators (one -d for UDP; the outer's TCP socket is passed through), as a
    /// .socket unit with ListenStream= and ListenDatagram= passes them: the stub serves both and
    /// binds nothing itself.
    func testSocketActivationServesThePassedUDPAndTCPSockets() throws {
        try requireActivate()
        let port = Int(try Dnsmasq.freePort(on: HTTPDNSIPAddress("127.0.0.1")!))
        let notify = try NotifySocket(abstract: false)
        let environment = "NOTIFY_SOCKET=\(notify.name)"
        let tool = try RunningTool(executable: URL(fileURLWithPath: Self.activate), arguments: [
            "-l", "127.0.0.1:\(port)", "-E", environment, "--",
            Self.activate, "-d", "-l", "127.0.0.1:\(port)", "-E", environment,
            runner.executable.path, "stub", "--listen", "127.0.0.1:1", "--hosts", try hostsFile(), "--upstream", "udp=127.0.0.1:1",
        ])
        addCleanup { if tool.isRunning { tool.send(SIGKILL); _ = try? tool.wait(timeout: .seconds(20)) } }
        // systemd-socket-activate starts its command on the first connection (as systemd does).
        var answer: DNSMessage?
        let deadline = ContinuousClock.now + .seconds(20)
        while answer == nil, ContinuousClock.now < deadline, tool.isRunning {
            answer = try StubWire.tcp("act.test", .A, port: port)
            if answer == nil { usleep(50_000) }
        }
        XCTAssertEqual(answer?.answers.map(\.data), [.a([10, 9, 9, 9])], String(decoding: tool.stderr, as: UTF8.self))
        XCTAssertEqual(try StubWire.udp("act.test", .A, port: port).message?.answers.map(\.data), [.a([10, 9, 9, 9])], "UDP")
        XCTAssertEqual(try tool.waitForLine(startingWith: "listening on "), "listening on udp://127.0.0.1:\(port) tcp://127.0.0.1:\(port)",
                       "the passed sockets, not --listen")
        XCTAssertEqual(notify.receive(milliseconds: 10_000), "READY=1")
        tool.send(SIGTERM)
        XCTAssertEqual(notify.receive(milliseconds: 10_000), "STOPPING=1")
        XCTAssertEqual(try tool.wait(timeout: .seconds(20)), 0)
        XCTAssertEqual(tool.sanitizerReports, [])
    }

    /// Only a TCP socket passed: DNS needs both, so the stub says so and exits 1.
    func testSocketActivationWithOnlyATCPSocketFails() throws {
        try requireActivate()
        let port = Int(try Dnsmasq.freePort(on: HTTPDNSIPAddress("127.0.0.1")!))
        let tool = try RunningTool(executable: URL(fileURLWithPath: Self.activate), arguments: [
            "-l", "127.0.0.1:\(port)", runner.executable.path, "stub", "--hosts", try hostsFile(),
        ])
        addCleanup { if tool.isRunning { tool.send(SIGKILL); _ = try? tool.wait(timeout: .seconds(20)) } }
        let deadline = ContinuousClock.now + .seconds(20)
        while tool.isRunning, ContinuousClock.now < deadline {
            _ = try StubWire.tcp("act.test", .A, port: port, wait: 200)
        }
        XCTAssertEqual(try tool.wait(timeout: .seconds(20)), 1)
        let stderr = String(decoding: tool.stderr, as: UTF8.self)
        XCTAssertTrue(stderr.contains("socket activation needs one datagram and one stream socket"), stderr)
    }

    /// (d) READY=1 comes only once both sockets answer (a query sent the moment it arrives is
    /// answered over UDP and TCP, no retry), then STOPPING=1 at SIGTERM; a path and an abstract name.
    func testReadyIsSentOnlyOnceTheSocketsAnswer() throws {
        for abstract in [false, true] {
            let notify = try NotifySocket(abstract: abstract)
            var environment = ProcessInfo.processInfo.environment
            environment["NOTIFY_SOCKET"] = notify.name
            let stub = try runner.start(
                ["stub", "--listen", "127.0.0.1:0", "--hosts", try hostsFile(), "--upstream", "udp=127.0.0.1:1",
                 "--cache-dir", try temporaryDirectory().path],
                environment: environment)
            addCleanup { if stub.isRunning { stub.send(SIGKILL); _ = try? stub.wait(timeout: .seconds(20)) } }
            XCTAssertEqual(notify.receive(milliseconds: 30_000), "READY=1", "abstract \(abstract)")
            let line = try stub.waitForLine(startingWith: "listening on ", timeout: .seconds(1))
            let port = try XCTUnwrap(line.split(separator: ":").last.flatMap { Int($0) }, line)
            XCTAssertEqual(try StubWire.udp("act.test", .A, port: port, wait: 2000).message?.answers.count, 1, "UDP at READY")
            XCTAssertEqual(try StubWire.tcp("act.test", .A, port: port)?.answers.count, 1, "TCP at READY")
            XCTAssertNil(notify.receive(milliseconds: 100), "one READY=1")
            stub.send(SIGTERM)
            XCTAssertEqual(notify.receive(milliseconds: 10_000), "STOPPING=1")
            XCTAssertEqual(try stub.wait(timeout: .seconds(20)), 0)
        }
    }
}

/// A unix datagram socket standing in for systemd's notify socket: `name` is the NOTIFY_SOCKET
/// value (a path, or `@…` for an abstract name).
final class NotifySocket {
    let name: String
    private let fd: Int32
    private let path: String?

    init(abstract: Bool) throws {
        fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        let unique = UUID().uuidString.prefix(8)
        path = abstract ? nil : NSTemporaryDirectory() + "/httpdns-notify-\(unique)"
        name = path ?? "@httpdns-notify-\(unique)"
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        var bytes = Array(name.utf8)
        if abstract { bytes[0] = 0 }
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            for (index, byte) in bytes.enumerated() { buffer[index] = byte }
        }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + bytes.count + (abstract ? 0 : 1))
        let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) } }
        guard fd >= 0, bound == 0 else { throw ToolRunner.Failure("notify socket bind: \(String(cString: strerror(errno)))") }
    }

    deinit {
        close(fd)
        if let path { unlink(path) }
    }

    /// The next datagram as text, nil when none comes within `milliseconds`.
    func receive(milliseconds: Int32) -> String? {
        var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&entry, 1, milliseconds) == 1 else { return nil }
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        return count >= 0 ? String(decoding: buffer[0..<count], as: UTF8.self) : nil
    }
}

extension StubSystemdTests {
    /// The unit files in contrib/systemd pass `systemd-analyze verify` (with ExecStart= pointed at
    /// the built binary, which verify requires to exist). Their Documentation= man pages are
    /// checked where they are installed (PackageInstallTests): none is installed here.
    func testUnitFilesVerify() throws {
        let analyze = "/usr/bin/systemd-analyze"
        guard FileManager.default.isExecutableFile(atPath: analyze) else {
            return XCTFail("\(analyze) not found: install the Debian package systemd (scripts/ensure-deps.sh)")
        }
        let source = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("contrib/systemd")
        let directory = try temporaryDirectory()
        for name in ["httpdns-stub.socket", "httpdns-stub.service"] {
            var text = try String(contentsOf: source.appendingPathComponent(name), encoding: .utf8)
            if name.hasSuffix(".service") {
                XCTAssertTrue(text.contains("ExecStart=/usr/local/bin/httpdns stub --cache-dir /var/lib/httpdns-stub"))
                XCTAssertTrue(text.contains("Type=notify"))
                XCTAssertTrue(text.contains("\nCapabilityBoundingSet=\n"))
                text = text.replacingOccurrences(of: "/usr/local/bin/httpdns", with: runner.executable.path)
            } else {
                XCTAssertTrue(text.contains("ListenDatagram=127.0.0.153:53\nListenStream=127.0.0.153:53\n"))
            }
            try text.write(to: directory.appendingPathComponent(name), atomically: true, encoding: .utf8)
        }
        let result = try ToolRunner(executable: URL(fileURLWithPath: analyze)).run(
            ["verify", "--man=no", directory.appendingPathComponent("httpdns-stub.socket").path, directory.appendingPathComponent("httpdns-stub.service").path])
        XCTAssertEqual(result.status, 0, result.stderrText)
        XCTAssertEqual(result.stderrText, "", "no warning")
    }
}
