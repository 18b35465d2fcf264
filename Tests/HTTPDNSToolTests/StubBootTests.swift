#if canImport(Glibc)
import Glibc
#endif
import DNSStubCore
import DNSWire
import Foundation
import HTTPDNSCore
import HTTPDNSTestSupport
import XCTest

/// `httpdns stub` starting as a service (issue 23, boot and persistence), the built binary on
/// loopback: the caches on disk answered at once after `kill -9` with every upstream blackholed, a
/// damaged file refused whole, `--hosts`, socket activation under `systemd-socket-activate` and
/// `READY=1` on a notify socket of the test's own.
final class StubBootTests: ToolTestCase {
    let zone = """
        {"www.example.test": {"A": ["127.0.0.10"], "AAAA": ["::10"], "ttl": 120}}
        """

    /// dnsmasq with 100 names (A and AAAA; TTL 2 for h0-h49, 3600 for h50-h99), 50 TXT and 50 MX
    /// names (TTL 2): 300 questions.
    func startUpstream() throws -> Dnsmasq {
        try dnsmasq { configuration in
            configuration.ttl = 2
            configuration.extraOptions = (0..<100).map { "host-record=h\($0).boot.test,127.0.1.\($0),fd00::\($0)" + ($0 >= 50 ? ",3600" : "") }
                + (0..<50).map { "mx-host=m\($0).boot.test,mx\($0).boot.test,10" }
            configuration.txtRecords = (0..<50).map { ("t\($0).boot.test", ["text \($0)"]) }
        }
    }

    static let questions: [(name: String, type: DNSRecordType)] =
        (0..<100).flatMap { [("h\($0).boot.test", DNSRecordType.A), ("h\($0).boot.test", .AAAA)] }
        + (0..<50).map { ("t\($0).boot.test", .TXT) } + (0..<50).map { ("m\($0).boot.test", .MX) }

    /// Starts the stub with `arguments` after the common ones; returns it and its port.
    func startStub(_ arguments: [String], environment: [String: String]? = nil) throws -> (RunningTool, Int) {
        let stub = try runner.start(["stub", "--listen", "127.0.0.1:0", "--allow-private", "--timeout", "1"] + arguments, environment: environment)
        addCleanup { if stub.isRunning { stub.send(SIGKILL); _ = try? stub.wait(timeout: .seconds(20)) } }
        let line = try stub.waitForLine(startingWith: "listening on ")
        return (stub, try XCTUnwrap(line.split(separator: ":").last.flatMap { Int($0) }, line))
    }

    /// A UDP port on loopback that swallows every datagram: bound, never read, never answering.
    func blackholeUDP() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        let bound = Dnsmasq.withSockAddr(HTTPDNSIPAddress("127.0.0.1")!, 0) { bind(fd, $0, $1) }
        guard fd >= 0, bound == 0 else { throw ToolRunner.Failure("blackhole bind") }
        addCleanup { close(fd) }
        var address = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    /// (a) The issue's acceptance: a full cache, `kill -9`, a restart with the upstream and the
    /// HTTPDNS provider blackholed: at least 99 % of the names answered, stale where expired, at once.
    func testKillNineThenRestartWithEveryUpstreamBlackholedAnswersFromTheCachesAtOnce() throws {
        let upstream = try startUpstream()
        let directory = try temporaryDirectory().appendingPathComponent("state").path
        let provider = try startService(zone: zone)
        let common = ["--cache-dir", directory, "--protect", "www.example.test"]
        let (first, port) = try startStub(common + ["--provider", "dnspod=\(provider)", "--upstream", "udp=127.0.0.1:\(upstream.port)"])
        let all = Self.questions + [("www.example.test", .A)]
        for (name, type) in all {
            let reply = try XCTUnwrap(try StubWire.udp(name, type, port: port).message, "\(name) \(type) while warming")
            XCTAssertEqual(reply.rcode, .noError, "\(name) \(type)")
            XCTAssertFalse(reply.answers.isEmpty, "\(name) \(type)")
        }
        // Both caches save at most 2 s after a change: 3 s covers the last one.
        usleep(3_000_000)
        var info = stat()
        XCTAssertEqual(stat(directory + "/stub.cache", &info), 0, "stub.cache written")
        XCTAssertEqual(info.st_mode & 0o777, 0o600)
        XCTAssertEqual(stat(directory + "/engine.cache", &info), 0, "engine.cache written")
        first.send(SIGKILL)
        _ = try first.wait(timeout: .seconds(20))
        upstream.stop()

        let stalled = try StalledListener(address: "127.0.0.1")
        let blackhole = try blackholeUDP()
        let (second, _) = try startStub(common + ["--listen", "127.0.0.1:\(port)", "--provider", "dnspod=http://127.0.0.1:\(stalled.port)",
                                                  "--upstream", "udp=127.0.0.1:\(blackhole)"])
        var latencies: [Double] = []
        var answered = 0
        var stale = 0
        for (name, type) in all {
            let (reply, milliseconds) = try StubWire.udp(name, type, port: port, wait: 5000)
            latencies.append(milliseconds)
            guard let reply, reply.rcode == .noError, !reply.answers.isEmpty else { continue }
            answered += 1
            let isStale = reply.edns.flatMap { DNSExtendedError.first(in: $0.options) }?.infoCode == .staleAnswer
            if isStale { stale += 1 }
            // h0-h49, TXT and MX had 2 s: expired, so stale (TTL 30, EDE 3); h50-h99 had 3600 s: fresh.
            if name.hasPrefix("h"), let index = Int(name.dropFirst().prefix { $0.isNumber }), index >= 50 {
                XCTAssertFalse(isStale, "\(name) is still fresh")
                XCTAssertTrue(reply.answers.allSatisfy { $0.ttl > 3500 && $0.ttl < 3600 }, "\(name): TTL counted down")
            } else if name != "www.example.test" {
                XCTAssertTrue(isStale, "\(name) \(type) expired: served stale")
                XCTAssertTrue(reply.answers.allSatisfy { $0.ttl == 30 }, "\(name): RFC 8767 stale TTL")
            }
        }
        let sorted = latencies.sorted()
        let median = sorted[sorted.count / 2]
        let p99 = sorted[Int(Double(sorted.count) * 0.99) - 1]
        print("stub restart, upstreams blackholed: \(answered)/\(all.count) answered (\(stale) stale); "
              + "latency median \(String(format: "%.2f", median)) ms, p99 \(String(format: "%.2f", p99)) ms, "
              + "max \(String(format: "%.1f", sorted.last ?? 0)) ms (the first waits for the upstream once)")
        XCTAssertGreaterThanOrEqual(Double(answered), 0.99 * Double(all.count), "≥ 99 % answered")
        XCTAssertGreaterThanOrEqual(stale, 200, "the expired ones served stale")
        // The issue says 5 ms. A debug build measures about 0.3 ms median and under 2 ms p99 here;
        // the bounds leave ThreadSanitizer (5-15x slower) and a loaded 2-core CI machine room, and
        // are still far below the 1 s upstream timeout that any wait for the blackholed upstream costs.
        XCTAssertLessThan(median, 10, "median")
        XCTAssertLessThan(p99, 50, "p99")
        second.send(SIGTERM)
        XCTAssertEqual(try second.wait(timeout: .seconds(20)), 0)
        XCTAssertEqual(second.sanitizerReports, [])
    }

    /// (b) A damaged cache file loads nothing (not even the entries before the damage), is reported
    /// once on stderr, and the stub starts anyway. Also: a clean stop saves at once.
    func testDamagedCacheFileIsRefusedWholeAndTheStubStarts() throws {
        let upstream = try startUpstream()
        let directory = try temporaryDirectory().path
        let (first, port) = try startStub(["--cache-dir", directory, "--protect", "none.invalid", "--upstream", "udp=127.0.0.1:\(upstream.port)"])
        for (name, type) in Self.questions.prefix(20) { XCTAssertNotNil(try StubWire.udp(name, type, port: port).message) }
        first.send(SIGTERM)
        XCTAssertEqual(try first.wait(timeout: .seconds(20)), 0)
        let path = directory + "/stub.cache"
        var bytes = try XCTUnwrap(FileManager.default.contents(atPath: path), "saved at a clean stop")
        bytes[bytes.count - 10] ^= 0x20
        try bytes.write(to: URL(fileURLWithPath: path))
        XCTAssertEqual(chmod(path, 0o600), 0)

        let blackhole = try blackholeUDP()
        let (second, port2) = try startStub(["--cache-dir", directory, "--protect", "none.invalid", "--upstream", "udp=127.0.0.1:\(blackhole)"])
        let reply = try XCTUnwrap(try StubWire.udp("h0.boot.test", .A, port: port2, wait: 5000).message)
        XCTAssertEqual(reply.rcode, .serverFailure, "nothing loaded: not even the entries before the damage")
        let warnings = String(decoding: second.stderr, as: UTF8.self).split(separator: "\n").filter { $0.contains("stub.cache") }
        XCTAssertEqual(warnings.count, 1, "\(warnings)")
        XCTAssertTrue(warnings.first?.contains("rejected: checksum mismatch; ignored") ?? false, "\(warnings)")
    }

    /// A cache directory that cannot be made (its path is a file): the stub serves all the same, and
    /// the failed saves (every 2 s and at stop) are reported once.
    func testUnwritableCacheDirectoryIsReportedOnce() throws {
        let upstream = try startUpstream()
        let file = try temporaryDirectory().appendingPathComponent("not-a-directory").path
        try "x".write(toFile: file, atomically: true, encoding: .utf8)
        let (stub, port) = try startStub(["--cache-dir", file, "--protect", "none.invalid", "--upstream", "udp=127.0.0.1:\(upstream.port)"])
        XCTAssertEqual(try StubWire.udp("h70.boot.test", .A, port: port).message?.answers.count, 1)
        usleep(4_500_000)  // two save ticks with the change unsaved
        stub.send(SIGTERM)
        XCTAssertEqual(try stub.wait(timeout: .seconds(20)), 0)
        let failures = String(decoding: stub.stderr, as: UTF8.self).split(separator: "\n")
            .filter { $0.contains("stub cache file") && $0.contains("could not be written") }
        XCTAssertEqual(failures.count, 1, "\(failures)")
    }

    /// `--cache-key-file`: the files are signed with HMAC-SHA256 under the key; without it, or with
    /// another, they are refused (one warning each) and nothing is served from them.
    func testCacheKeyFileSignsBothFiles() throws {
        let upstream = try startUpstream()
        let directory = try temporaryDirectory()
        let state = directory.appendingPathComponent("state").path
        let key = directory.appendingPathComponent("key").path
        try "0123456789abcdef0123\n".write(toFile: key, atomically: true, encoding: .utf8)
        let (first, port) = try startStub(["--cache-dir", state, "--cache-key-file", key, "--protect", "none.invalid",
                                           "--upstream", "udp=127.0.0.1:\(upstream.port)"])
        XCTAssertNotNil(try StubWire.udp("h60.boot.test", .A, port: port).message)
        first.send(SIGTERM)
        XCTAssertEqual(try first.wait(timeout: .seconds(20)), 0)
        let header = try XCTUnwrap(FileManager.default.contents(atPath: state + "/stub.cache")).prefix(39)
        XCTAssertEqual(String(decoding: header, as: UTF8.self), "swift-httpdns-stub-cache 1 hmac-sha256 ")
        upstream.stop()
        let blackhole = try blackholeUDP()
        let (keyed, keyedPort) = try startStub(["--cache-dir", state, "--cache-key-file", key, "--protect", "none.invalid",
                                                "--upstream", "udp=127.0.0.1:\(blackhole)"])
        XCTAssertEqual(try StubWire.udp("h60.boot.test", .A, port: keyedPort).message?.answers.count, 1, "loaded with the key")
        keyed.send(SIGKILL)
        _ = try keyed.wait(timeout: .seconds(20))
        let (unkeyed, unkeyedPort) = try startStub(["--cache-dir", state, "--protect", "none.invalid", "--upstream", "udp=127.0.0.1:\(blackhole)"])
        XCTAssertEqual(try StubWire.udp("h60.boot.test", .A, port: unkeyedPort, wait: 5000).message?.rcode, .serverFailure, "refused without it")
        XCTAssertTrue(String(decoding: unkeyed.stderr, as: UTF8.self).contains("stub.cache rejected: checksum mismatch; ignored"))
        try "short\n".write(toFile: key, atomically: true, encoding: .utf8)
        XCTAssertEqual(try run(["stub", "--cache-key-file", key]).status, 64, "a key under 16 bytes")
    }

    /// (e) `--hosts`: A and AAAA from the file, NODATA for the family it lacks, PTR, TTL 60; other
    /// names and types go on to the upstream; a bad line is a usage error naming it.
    func testHostsFileAnswersAuthoritatively() throws {
        let directory = try temporaryDirectory()
        let hosts = directory.appendingPathComponent("hosts")
        try "# static\n10.1.2.3 printer.lan\n2001:db8::7 both.lan\n10.1.2.7 both.lan\n".write(to: hosts, atomically: true, encoding: .utf8)
        let blackhole = try blackholeUDP()
        let (_, port) = try startStub(["--hosts", hosts.path, "--upstream", "udp=127.0.0.1:\(blackhole)"])
        let a = try XCTUnwrap(try StubWire.udp("Printer.LAN", .A, port: port).message)
        XCTAssertEqual(a.answers.map(\.data), [.a([10, 1, 2, 3])])
        XCTAssertEqual(a.answers.map(\.ttl), [60])
        let nodata = try XCTUnwrap(try StubWire.udp("printer.lan", .AAAA, port: port).message)
        XCTAssertEqual(nodata.rcode, .noError)
        XCTAssertEqual(nodata.answers, [], "NODATA, not asked upstream")
        let both = try XCTUnwrap(try StubWire.udp("both.lan", .AAAA, port: port).message)
        XCTAssertEqual(both.answers.map(\.data), [.aaaa(HTTPDNSIPAddress("2001:db8::7")!.bytes)])
        let ptr = try XCTUnwrap(try StubWire.udp("3.2.1.10.in-addr.arpa", .PTR, port: port).message)
        XCTAssertEqual(ptr.answers.map(\.data), [.ptr(try DNSName("printer.lan"))])
        let tcp = try XCTUnwrap(try StubWire.tcp("both.lan", .A, port: port))
        XCTAssertEqual(tcp.answers.map(\.data), [.a([10, 1, 2, 7])])

        try "10.1.2.3 ok.lan\n10.1.2.300 bad.lan\n".write(to: hosts, atomically: true, encoding: .utf8)
        let bad = try run(["stub", "--hosts", hosts.path])
        XCTAssertEqual(bad.status, 64, bad.stderrText)
        XCTAssertTrue(bad.stderrText.contains("line 2: '10.1.2.300' is not an IP address"), bad.stderrText)
    }
}
