import Foundation
import HTTPDNSCore
import HTTPDNSProxyTestBed
import HTTPDNSTestSupport
import XCTest

/// `httpdns proxy` on SIGTERM drains without losing a request (issue 25): new connects are refused
/// at once, a tunnel with an answer in flight and a forwarded request already read get their whole
/// answers, a request sent the instant the signal goes is answered, an idle tunnel is closed, and
/// curl `--parallel` through the proxy sees every transfer it started answered.
final class ProxyDrainTests: XCTestCase {
    var bed: ProxyTestBed!
    var tool: ToolRunner!

    /// `--proxy-auth u:p`, as clients send it.
    private let authorization = "Proxy-Authorization: Basic dTpw\r\n"

    override func setUpWithError() throws {
        bed = try ProxyTestBed()
        tool = try ToolRunner()
    }

    override func tearDown() {
        bed?.stop()
    }

    func testAnswersInFlightAtSIGTERMAreWholeAndNewConnectsAreRefused() throws {
        let (daemon, _, port) = try startDaemon()
        let big = try [UInt8](Data(contentsOf: bed.bigFile))
        let origin = "\(ProxyTestBed.origin.uriText):\(bed.httpPort)"
        let plain = "\(ProxyTestBed.plainHost):\(bed.httpPort)"

        // A tunnel with two 6 MiB answers asked for and not read yet: more than the sockets between
        // here and nginx hold, so most of them is still to be relayed when the signal comes.
        let tunnel = try ResponseReader(port: port, receiveBuffer: 16_384)
        tunnel.client.send("CONNECT \(origin) HTTP/1.1\r\nHost: \(origin)\r\n\(authorization)\r\n")
        XCTAssertEqual(tunnel.head(timeout: 10)?.status, 200, "the tunnel is open")
        tunnel.client.send(String(repeating: "GET /big/file.bin HTTP/1.1\r\nHost: \(plain)\r\n\r\n", count: 2))
        // A forwarded request for the same file, its head read but not its body.
        let forward = try ResponseReader(port: port, receiveBuffer: 16_384)
        forward.client.send("GET http://\(plain)/big/file.bin HTTP/1.1\r\nHost: \(plain)\r\n\(authorization)\r\n")
        XCTAssertEqual(forward.head(timeout: 10)?.status, 200, "the forwarded answer has begun")
        XCTAssertEqual(tunnel.head(timeout: 10)?.status, 200, "the tunnel's first answer has begun")
        // A tunnel whose one exchange is over (a kept-alive connection with nothing in flight).
        let idle = try ResponseReader(port: port)
        idle.client.send("CONNECT \(origin) HTTP/1.1\r\nHost: \(origin)\r\n\(authorization)\r\n")
        XCTAssertEqual(idle.head(timeout: 10)?.status, 200)
        idle.client.send("GET / HTTP/1.1\r\nHost: \(plain)\r\n\r\n")
        XCTAssertEqual(idle.response(timeout: 10).map { String(decoding: $0.body, as: UTF8.self) }, ProxyTestBed.realBody)
        // A client that has connected and sends its request as the signal goes.
        let racing = try ResponseReader(port: port)

        daemon.send(SIGTERM)
        racing.client.send("GET http://\(plain)/ HTTP/1.1\r\nHost: \(plain)\r\n\(authorization)\r\n")
        // The listener stops accepting first.
        let deadline = ContinuousClock.now + .seconds(10)
        while (try? RawHTTPClient(port: port)) != nil, ContinuousClock.now < deadline { usleep(5_000) }
        XCTAssertThrowsError(try RawHTTPClient(port: port), "a new connect after SIGTERM is refused")
        XCTAssertTrue(daemon.isRunning, "still draining: answers are in flight")

        let racingAnswer = racing.response(timeout: 10)
        XCTAssertEqual(racingAnswer?.status, 200, "the request sent with the signal is answered")
        XCTAssertEqual(racingAnswer.map { String(decoding: $0.body, as: UTF8.self) }, ProxyTestBed.realBody)
        let forwarded = forward.body(timeout: 30)
        XCTAssertEqual(forwarded.count, big.count, "the forwarded answer is whole")
        XCTAssertTrue(forwarded == big, "the forwarded answer's bytes")
        XCTAssertTrue(forward.ended(timeout: 10), "the forwarded request's connection closes after its answer")
        let first = tunnel.body(timeout: 30)
        XCTAssertEqual(first.count, big.count, "the tunnel's first answer is whole")
        XCTAssertTrue(first == big)
        let second = tunnel.response(timeout: 30)
        XCTAssertEqual(second?.status, 200, "the tunnel's second answer")
        XCTAssertEqual(second?.body.count, big.count, "the tunnel's second answer is whole")
        XCTAssertTrue(second?.body == big)
        XCTAssertTrue(idle.ended(timeout: 10), "the idle tunnel is closed")
        XCTAssertTrue(tunnel.ended(timeout: 10), "the tunnel closes once quiet")
        assertCleanStop(daemon)
    }

    /// curl `--parallel` through the proxy: tunnels (HTTPS, kept alive, HTTP/2 inside) and forwarded
    /// plain requests (a connection each), SIGTERM once 100 of 600 transfers are done, five times.
    /// Every transfer is answered in full (200 and the whole body) or could not connect (curl's exit
    /// code 7: the listener was closed, so nothing was sent); none is cut, reset or left empty.
    ///
    /// One outcome is the client's, not the proxy's: streams that curl 7.88 multiplexes onto a kept
    /// tunnel after the drain closed it as quiet for a second end with no byte answered, on no new
    /// connection (exit code 18, status 000, `num_connects` 0). A proxy cannot send the GOAWAY inside
    /// TLS that would tell an HTTP/2 client, and curl does not notice the close before it reuses the
    /// connection (seen in 2 of 14 ThreadSanitizer runs under load, 1 and 5 or more streams at once).
    /// Those are counted apart, and nginx's access log tells them from a cut: such a stream never
    /// reached the origin, so every HTTPS request nginx logged in the round is one curl got whole.
    /// Any answer cut after its first byte, and any transfer left unanswered on a connection of its
    /// own, is still lost.
    func testCurlParallelThroughTheProxyLosesNoTransferAcrossTheDrain() throws {
        for round in 1...5 { try curlThroughTheDrain(round: round) }
    }

    private func curlThroughTheDrain(round: Int) throws {
        let logged = bed.nginx.accessLog.count
        let (daemon, url, _) = try startDaemon()
        let count = 600
        let bigPath = "big/file.bin"
        let bigSize = try Data(contentsOf: bed.bigFile).count
        var config = ""
        for index in 0..<count {
            let target = index % 60 == 30 ? bed.secureURL + bigPath : (index.isMultiple(of: 2) ? bed.secureURL : bed.plainURL)
            config += "url = \"\(target)\"\noutput = \"/dev/null\"\n"
        }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("pdrain-curl-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let configFile = directory.appendingPathComponent("transfers.curlrc")
        try config.write(to: configFile, atomically: true, encoding: .utf8)

        let curl = try RunningTool(executable: URL(fileURLWithPath: "/usr/bin/curl"), arguments: [
            "-s", "--parallel", "--parallel-max", "8", "--proxy", url, "--cacert", bed.certificates.caCertificatePath,
            "-w", "%{exitcode} %{http_code} %{size_download} %{url_effective} %{num_connects}\\n", "-K", configFile.path,
        ], environment: [:])
        let deadline = ContinuousClock.now + .seconds(120)
        while Self.lines(curl.stdout).count < 100, curl.isRunning, ContinuousClock.now < deadline { usleep(2_000) }
        daemon.send(SIGTERM)
        _ = try curl.wait(timeout: .seconds(120))

        let lines = Self.lines(curl.stdout)
        XCTAssertEqual(lines.count, count, "round \(round): one line per transfer")
        var answered = 0
        var refused = 0
        var answeredSecure = 0
        var onClosedTunnel = 0
        var lost: [String] = []
        for line in lines {
            let fields = line.split(separator: " ")
            guard fields.count == 5 else {
                lost.append(line)
                continue
            }
            let expected = fields[3].hasSuffix(bigPath) ? bigSize : ProxyTestBed.realBody.utf8.count
            if fields[0] == "0", fields[1] == "200", Int(fields[2]) == expected {
                answered += 1
                if fields[3].hasPrefix("https:") { answeredSecure += 1 }
            } else if fields[0] == "7" {
                refused += 1
            } else if fields[0] == "18", fields[1] == "000", fields[2] == "0", fields[4] == "0", fields[3].hasPrefix("https:") {
                onClosedTunnel += 1
            } else {
                lost.append(line)
            }
        }
        XCTAssertEqual(
            lost, [],
            "round \(round): transfers started and not answered in full (\(answered) answered, \(refused) refused, "
                + "\(onClosedTunnel) sent on a tunnel already closed as quiet)")
        // nginx logs a request when it ends: wait for the answered ones, then a little for any other.
        let logDeadline = ContinuousClock.now + .seconds(5)
        var secure: [Nginx.AccessLogEntry] = []
        repeat {
            usleep(10_000)
            secure = bed.nginx.accessLog.dropFirst(logged).filter { !$0.sni.isEmpty }
        } while secure.count < answeredSecure && ContinuousClock.now < logDeadline
        usleep(200_000)
        secure = bed.nginx.accessLog.dropFirst(logged).filter { !$0.sni.isEmpty }
        XCTAssertEqual(
            secure.count, answeredSecure,
            "round \(round): every HTTPS request that reached nginx was answered to curl in full (\(onClosedTunnel) on a closed tunnel)")
        XCTAssertGreaterThanOrEqual(answered, 100, "round \(round)")
        XCTAssertGreaterThan(refused, 0, "round \(round): the signal lands mid-run, later connects are refused")
        assertCleanStop(daemon, round: round)
    }

    /// `--drain-timeout`: a tunnel whose answer is never read stays busy; it is cut when the timeout
    /// passes, stderr says so, and the exit status is still 0.
    func testDrainTimeoutCutsWhatIsStillBusyAndSaysSo() throws {
        let (daemon, _, port) = try startDaemon(["--drain-timeout", "1"])
        let origin = "\(ProxyTestBed.origin.uriText):\(bed.httpPort)"
        let stuck = try ResponseReader(port: port, receiveBuffer: 16_384)
        stuck.client.send("CONNECT \(origin) HTTP/1.1\r\nHost: \(origin)\r\n\(authorization)\r\n")
        XCTAssertEqual(stuck.head(timeout: 10)?.status, 200)
        stuck.client.send("GET /big/file.bin HTTP/1.1\r\nHost: \(ProxyTestBed.plainHost)\r\n\r\n")
        XCTAssertEqual(stuck.head(timeout: 10)?.status, 200)
        let signalled = ContinuousClock.now
        daemon.send(SIGTERM)
        assertCleanStop(daemon, cut: 1)
        let took = ContinuousClock.now - signalled
        XCTAssertGreaterThanOrEqual(took, .milliseconds(900), "the drain waited for the busy tunnel")
        XCTAssertLessThan(took, .seconds(10), "then cut it")

        let help = try tool.run(["proxy", "--help"])
        XCTAssertTrue(help.stdoutText.contains("--drain-timeout <seconds>"), help.stdoutText)
        XCTAssertEqual(try tool.run(["proxy", "--drain-timeout", "soon"]).status, 64)
        XCTAssertEqual(try tool.run(["proxy", "--drain-timeout", "0"]).status, 64)
    }

    // MARK: - Helpers

    /// Starts the daemon with credential `u:p`; returns it, the proxy URL and its port.
    private func startDaemon(_ extra: [String] = []) throws -> (RunningTool, String, Int) {
        var environment = ProcessInfo.processInfo.environment
        for name in ["http_proxy", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"] { environment[name] = "http://127.0.0.1:9" }
        environment["no_proxy"] = nil
        environment["NO_PROXY"] = nil
        let daemon = try tool.start(
            ["proxy", "--listen", "127.0.0.1:0", "--proxy-auth", "u:p"] + bed.engineArguments + extra, environment: environment)
        let url = try daemon.waitForLine(startingWith: "http://")
        let port = try XCTUnwrap(url.split(separator: ":").last.flatMap { Int($0) }, url)
        return (daemon, url, port)
    }

    /// Exit 0 on SIGTERM, no sanitizer report on stderr, and `cut` connections cut by the drain.
    private func assertCleanStop(_ daemon: RunningTool, cut: Int = 0, round: Int = 0, file: StaticString = #filePath, line: UInt = #line) {
        let status = try? daemon.wait(timeout: .seconds(30))
        let stderr = String(decoding: daemon.stderr, as: UTF8.self)
        XCTAssertEqual(status, 0, "round \(round): exit status on SIGTERM; stderr:\n\(stderr)", file: file, line: line)
        XCTAssertEqual(daemon.sanitizerReports, [], "round \(round): sanitizer reports:\n\(stderr)", file: file, line: line)
        let said = cut == 0 ? nil : "httpdns: the drain cut \(cut) connection\(cut == 1 ? "" : "s") still busy at --drain-timeout"
        XCTAssertEqual(stderr.split(separator: "\n").first { $0.contains("the drain cut") }.map(String.init), said, stderr, file: file, line: line)
    }

    private static func lines(_ data: Data) -> [String] {
        String(decoding: data, as: UTF8.self).split(separator: "\n").map(String.init)
    }
}

/// Reads HTTP/1.1 responses (with `Content-Length`, or none for a CONNECT's 200) from a
/// ``RawHTTPClient`` byte-exactly, a head and its body separately, pipelined ones in turn.
private final class ResponseReader {
    let client: RawHTTPClient
    private var buffer: [UInt8] = []
    private var eof = false
    /// The body length of the head read last, while its body is still to be read.
    private var bodyLength: Int?

    /// Connects to the proxy; with `receiveBuffer`, a small receive buffer keeps answers in the proxy.
    init(port: Int, receiveBuffer: Int32? = nil) throws {
        client = try RawHTTPClient(port: port)
        if var size = receiveBuffer {
            setsockopt(client.fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
    }

    /// The next response head: its status (nil on EOF or timeout).
    func head(timeout: Double) -> (status: Int, head: String)? {
        let end = Date().addingTimeInterval(timeout)
        while true {
            if let split = Self.headEnd(buffer) {
                let head = String(decoding: buffer[..<split], as: UTF8.self)
                buffer.removeFirst(split + 4)
                let lines = head.split(separator: "\r\n")
                guard let first = lines.first, let status = first.split(separator: " ").dropFirst().first.flatMap({ Int($0) }) else { return nil }
                bodyLength = lines.first { $0.lowercased().hasPrefix("content-length:") }
                    .flatMap { Int($0.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)) } ?? 0
                return (status, head)
            }
            guard fill(until: end) else { return nil }
        }
    }

    /// The body of the head read last (what arrived of it, on EOF or timeout).
    func body(timeout: Double) -> [UInt8] {
        let length = bodyLength ?? 0
        bodyLength = nil
        let end = Date().addingTimeInterval(timeout)
        while buffer.count < length, fill(until: end) {}
        let body = Array(buffer.prefix(length))
        buffer.removeFirst(body.count)
        return body
    }

    /// The next whole response.
    func response(timeout: Double) -> (status: Int, body: [UInt8])? {
        guard let head = head(timeout: timeout) else { return nil }
        return (head.status, body(timeout: timeout))
    }

    /// Whether the peer closes (cleanly, nothing more sent) within `timeout`.
    func ended(timeout: Double) -> Bool {
        let end = Date().addingTimeInterval(timeout)
        while !eof, fill(until: end) {}
        return eof && buffer.isEmpty
    }

    /// Reads once; false on EOF, an error or timeout.
    private func fill(until end: Date) -> Bool {
        guard !eof else { return false }
        let left = end.timeIntervalSinceNow
        guard left > 0 else { return false }
        var poller = pollfd(fd: client.fd, events: Int16(POLLIN), revents: 0)
        guard poll(&poller, 1, Int32(min(left, 1) * 1000)) >= 0 else { return false }
        guard poller.revents != 0 else { return true }
        var chunk = [UInt8](repeating: 0, count: 65_536)
        let count = recv(client.fd, &chunk, chunk.count, 0)
        guard count > 0 else {
            eof = true
            return false
        }
        buffer += chunk[..<count]
        return true
    }

    private static func headEnd(_ bytes: [UInt8]) -> Int? {
        guard bytes.count >= 4 else { return nil }
        for index in 0...(bytes.count - 4) where bytes[index] == 13 && bytes[index + 1] == 10 && bytes[index + 2] == 13 && bytes[index + 3] == 10 {
            return index
        }
        return nil
    }
}
