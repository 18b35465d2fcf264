#if canImport(Glibc)
import Glibc
#endif
import Foundation
import HTTPDNSCore
import HTTPDNSTestSupport
import XCTest

/// `httpdns stub`, the built binary, asked by `dig` and `kdig` on loopback: A/AAAA from a loopback
/// HTTPDNS service (the provider), every other type from a dnsmasq (the `udp=` upstream) that lies
/// about the A record.
final class StubCommandTests: ToolTestCase {
    let zone = """
        {"www.example.test": {"A": ["127.0.0.10"], "AAAA": ["::10"], "ttl": 120}}
        """
    // About 800 bytes: over 512, and within dnsmasq's config line limit (about 1,000 characters).
    static let bigTXT = (0..<4).map { index in String(repeating: Character(String(index)), count: 200) }

    var upstream: Dnsmasq!

    /// Starts dnsmasq (lying A, MX, TXT records with `ttl`) and the stub in front of it and the
    /// HTTPDNS service; returns the stub and its port.
    func startStub(_ extra: [String] = [], ttl: UInt32 = 300) throws -> (RunningTool, Int) {
        let base = try startService(zone: zone)
        upstream = try dnsmasq { configuration in
            configuration.ttl = ttl
            configuration.lie("www.example.test", to: HTTPDNSIPAddress("127.0.0.66")!)
            configuration.txtRecords = [("txt.example.test", ["hello stub"]), ("big.example.test", Self.bigTXT)]
            configuration.extraOptions = ["mx-host=mail.example.test,mx1.example.test,10"]
        }
        let arguments = ["stub", "--listen", "127.0.0.1:0", "--provider", "dnspod=\(base)", "--allow-private",
                         "--upstream", "udp=127.0.0.1:\(upstream.port)", "--timeout", "2"] + extra
        let stub = try runner.start(arguments)
        addCleanup { _ = try? self.stop(stub) }
        let line = try stub.waitForLine(startingWith: "listening on ")
        let port = try XCTUnwrap(line.split(separator: ":").last.flatMap { Int($0) }, line)
        XCTAssertEqual(line, "listening on udp://127.0.0.1:\(port) tcp://127.0.0.1:\(port)")
        return (stub, port)
    }

    @discardableResult
    func stop(_ stub: RunningTool) throws -> Int32 {
        stub.send(SIGTERM)
        return try stub.wait(timeout: .seconds(20))
    }

    /// `dig @127.0.0.1 -p PORT` with `arguments`; fails loudly when dig is missing.
    func dig(_ port: Int, _ arguments: [String], tool: String = "/usr/bin/dig") throws -> ToolRunner.Result {
        guard FileManager.default.isExecutableFile(atPath: tool) else {
            XCTFail("\(tool) not found: install the Debian package \(tool.hasSuffix("kdig") ? "knot-dnsutils" : "bind9-dnsutils")")
            throw ToolRunner.Failure("\(tool) missing")
        }
        let result = try ToolRunner(executable: URL(fileURLWithPath: tool))
            .run(["@127.0.0.1", "-p", "\(port)"] + (tool.hasSuffix("kdig") ? ["+timeout=3", "+retry=0"] : ["+time=3", "+tries=1"]) + arguments,
                 timeout: .seconds(30))
        return result
    }

    func testAFromHTTPDNSOtherTypesFromTheUpstreamOverUDPAndTCP() throws {
        let (stub, port) = try startStub()
        XCTAssertEqual(try dig(port, ["+short", "www.example.test", "A"]).stdoutText, "127.0.0.10\n", "not dnsmasq's lie")
        XCTAssertEqual(try dig(port, ["+short", "+tcp", "www.example.test", "AAAA"]).stdoutText, "::10\n")
        XCTAssertEqual(try dig(port, ["+short", "mail.example.test", "MX"]).stdoutText, "10 mx1.example.test.\n")
        XCTAssertEqual(try dig(port, ["+short", "+tcp", "txt.example.test", "TXT"]).stdoutText, "\"hello stub\"\n")
        let kdig = try dig(port, ["+short", "+tcp", "www.example.test", "A"], tool: "/usr/bin/kdig")
        XCTAssertEqual(kdig.stdoutText, "127.0.0.10\n", kdig.stderrText)
        let kdigUDP = try dig(port, ["+short", "mail.example.test", "MX"], tool: "/usr/bin/kdig")
        XCTAssertEqual(kdigUDP.stdoutText, "10 mx1.example.test.\n", kdigUDP.stderrText)
        XCTAssertEqual(try stop(stub), 0, "a clean stop on SIGTERM")
        XCTAssertEqual(stub.sanitizerReports, [])
    }

    func testQuestionCaseIsEchoed() throws {
        let (_, port) = try startStub()
        for transport in ["+notcp", "+tcp"] {
            let result = try dig(port, [transport, "WwW.ExAmPlE.TeSt", "A"])
            XCTAssertTrue(result.stdoutText.contains(";WwW.ExAmPlE.TeSt.\t\tIN\tA"), result.stdoutText)
            XCTAssertTrue(result.stdoutText.contains("status: NOERROR"), result.stdoutText)
            XCTAssertTrue(result.stdoutText.contains("127.0.0.10"), result.stdoutText)
        }
    }

    func testBigAnswerIsTruncatedOverUDPAndWholeOverTCP() throws {
        let (_, port) = try startStub()
        let result = try dig(port, ["+bufsize=512", "big.example.test", "TXT"])
        XCTAssertTrue(result.stdoutText.contains("Truncated, retrying in TCP mode"), result.stdoutText)
        for text in Self.bigTXT { XCTAssertTrue(result.stdoutText.contains(text), "every string over TCP") }
        let ignored = try dig(port, ["+bufsize=512", "+ignore", "big.example.test", "TXT"])
        XCTAssertTrue(ignored.stdoutText.contains("flags: qr tc"), ignored.stdoutText)
    }

    func testMalformedPacketsGetFormErrOrNothingAndTheStubGoesOn() throws {
        let (stub, port) = try startStub()
        // QDCOUNT 1, then a question cut inside its name.
        let cut: [UInt8] = [0x12, 0x34, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0, 7, 0x65, 0x78]
        let answer = try XCTUnwrap(try udpExchange(cut, port: port), "FORMERR expected")
        XCTAssertEqual(Array(answer.prefix(2)), [0x12, 0x34])
        XCTAssertEqual(answer[3] & 0x0F, 1, "FORMERR")
        XCTAssertNil(try udpExchange([1, 2, 3], port: port, wait: 300), "too short: dropped")
        // The same cut message over TCP: FORMERR too.
        let tcpAnswer = try XCTUnwrap(try tcpExchange([cut], port: port).first)
        XCTAssertEqual(tcpAnswer[3] & 0x0F, 1, "FORMERR over TCP")
        XCTAssertEqual(try dig(port, ["+short", "www.example.test"]).stdoutText, "127.0.0.10\n")
        XCTAssertTrue(stub.isRunning)
    }

    /// A client outside --allow-from: the stub is told to allow only 10.0.0.0/8, and loopback asks.
    /// (A real foreign address needs network namespaces; not done here.)
    func testClientOutsideAllowFromIsRefused() throws {
        let (_, port) = try startStub(["--allow-from", "10.0.0.0/8"])
        let result = try dig(port, ["www.example.test"])
        XCTAssertTrue(result.stdoutText.contains("status: REFUSED"), result.stdoutText)
        XCTAssertTrue(result.stdoutText.contains("EDE: 18"), result.stdoutText)
    }

    func testUpstreamStoppedServesStaleThenSERVFAILWithEDE() throws {
        let (_, port) = try startStub(ttl: 1)
        XCTAssertEqual(try dig(port, ["+short", "mail.example.test", "MX"]).stdoutText, "10 mx1.example.test.\n")
        upstream.stop()
        usleep(1_300_000)  // past the 1 s TTL
        let stale = try dig(port, ["+noall", "+answer", "+comments", "mail.example.test", "MX"])
        XCTAssertTrue(stale.stdoutText.contains("status: NOERROR"), stale.stdoutText)
        XCTAssertTrue(stale.stdoutText.contains("30\tIN\tMX\t10 mx1.example.test."), stale.stdoutText)
        XCTAssertTrue(stale.stdoutText.contains("EDE: 3"), stale.stdoutText)
        let uncached = try dig(port, ["txt.example.test", "TXT"])
        XCTAssertTrue(uncached.stdoutText.contains("status: SERVFAIL"), uncached.stdoutText)
        XCTAssertTrue(uncached.stdoutText.contains("EDE: 22") || uncached.stdoutText.contains("EDE: 23"), uncached.stdoutText)
    }

    /// A name outside --protect goes to the upstream: here a DoH one (RFC 8484 POST), the loopback
    /// HTTPDNS service's /dns-query, listed before the lying dnsmasq.
    func testUnprotectedNameGoesToADoHUpstream() throws {
        let doh = try startService(zone: """
            {"plain.example.test": {"A": ["127.0.0.20"], "ttl": 60}}
            """)
        let (_, port) = try startStub(["--protect", "www.example.test", "--upstream", "doh=\(doh)/dns-query"])
        // --upstream given twice: udp= (from startStub) first, so ask dnsmasq-unknown names: it
        // REFUSES them and the DoH upstream answers.
        XCTAssertEqual(try dig(port, ["+short", "plain.example.test", "A"]).stdoutText, "127.0.0.20\n")
        XCTAssertEqual(try dig(port, ["+short", "www.example.test", "A"]).stdoutText, "127.0.0.10\n", "protected: HTTPDNS")
    }

    /// Two queries written at once on one connection: both answered, each paired with its query
    /// by ID (RFC 7766 §6.2.1.1: resolved concurrently, answered in any order).
    func testPipelinedTCPQueriesAreBothAnswered() throws {
        let (_, port) = try startStub()
        let first: [UInt8] = [0, 1, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0] + Self.name("www.example.test") + [0, 1, 0, 1]
        let second: [UInt8] = [0, 2, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0] + Self.name("mail.example.test") + [0, 15, 0, 1]
        let answers = try tcpExchange([first, second], port: port)
        XCTAssertEqual(answers.map { Array($0.prefix(2)) }.sorted { $0[1] < $1[1] }, [[0, 1], [0, 2]])
        XCTAssertEqual(answers.map { $0.count > 3 ? $0[3] & 0x0F : 99 }, [0, 0], "NOERROR both")
    }

    static func name(_ text: String) -> [UInt8] {
        text.split(separator: ".").flatMap { [UInt8($0.utf8.count)] + Array($0.utf8) } + [0]
    }

    func testHelpAndBadUsage() throws {
        let help = try run(["stub", "--help"])
        XCTAssertEqual(help.status, 0)
        XCTAssertTrue(help.stdoutText.contains("127.0.0.153:53"), help.stdoutText)
        XCTAssertTrue(help.stdoutText.contains("127.0.0.53"), help.stdoutText)
        XCTAssertTrue(try run(["--help"]).stdoutText.contains("stub"))
        assertUsage(try run(["stub", "--upstream", "tcp=1.2.3.4:53"]))
        assertUsage(try run(["stub", "--allow-from", "nonsense"]))
        assertUsage(try run(["stub", "--listen", "localhost:53"]))
    }

    // MARK: - Raw exchanges

    /// Sends `bytes` in a datagram and returns the reply, nil when none comes within `wait` ms.
    func udpExchange(_ bytes: [UInt8], port: Int, wait: Int32 = 3000) throws -> [UInt8]? {
        let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        guard fd >= 0 else { throw ToolRunner.Failure("socket") }
        defer { close(fd) }
        let sent = Dnsmasq.withSockAddr(HTTPDNSIPAddress("127.0.0.1")!, UInt16(port)) { address, length in
            bytes.withUnsafeBytes { sendto(fd, $0.baseAddress, $0.count, 0, address, length) }
        }
        guard sent == bytes.count else { throw ToolRunner.Failure("sendto") }
        var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&entry, 1, wait) == 1 else { return nil }
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        return count > 0 ? Array(buffer[0..<count]) : nil
    }

    /// Writes `messages` length-prefixed in one go on one connection and reads as many answers.
    func tcpExchange(_ messages: [[UInt8]], port: Int) throws -> [[UInt8]] {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw ToolRunner.Failure("socket") }
        defer { close(fd) }
        let connected = Dnsmasq.withSockAddr(HTTPDNSIPAddress("127.0.0.1")!, UInt16(port)) { connect(fd, $0, $1) }
        guard connected == 0 else { throw ToolRunner.Failure("connect") }
        let framed = messages.flatMap { [UInt8($0.count >> 8), UInt8($0.count & 0xFF)] + $0 }
        _ = framed.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        var received: [UInt8] = []
        var answers: [[UInt8]] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while answers.count < messages.count {
            var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&entry, 1, 3000) == 1 else { break }
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            guard count > 0 else { break }
            received += buffer[0..<count]
            while received.count >= 2, received.count >= 2 + (Int(received[0]) << 8 | Int(received[1])) {
                let length = Int(received[0]) << 8 | Int(received[1])
                answers.append(Array(received[2..<(2 + length)]))
                received.removeFirst(2 + length)
            }
        }
        return answers
    }
}
