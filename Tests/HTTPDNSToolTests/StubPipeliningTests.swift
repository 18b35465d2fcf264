#if canImport(Glibc)
import Glibc
#endif
import Foundation
import HTTPDNSTestSupport
import XCTest

/// Issue 32, through the binary as a host administrator meets it: pipelined TCP queries resolved
/// concurrently (RFC 7766 §6.2.1.1), a drain that answers every one of them, and an answer within
/// the clients' timeout when every upstream is unreachable.
final class StubPipeliningTests: ToolTestCase {
    /// Starts `httpdns stub` on a free port with `upstream` (a UDP port on 127.0.0.1) as its only
    /// upstream; the port it listens on.
    private func startStub(upstream: UInt16, _ more: [String] = []) throws -> (RunningTool, UInt16) {
        let stub = try runner.start(["stub", "--listen", "127.0.0.1:0", "--upstream", "udp=127.0.0.1:\(upstream)"] + more)
        addCleanup { stub.send(SIGKILL) }
        let line = try stub.waitForLine(startingWith: "listening on ")
        let port = try XCTUnwrap(line.split(separator: ":").last.flatMap { UInt16($0) }, line)
        return (stub, port)
    }

    private static func framed(_ ids: ClosedRange<Int>, prefix: String) -> [UInt8] {
        ids.flatMap { id -> [UInt8] in
            let query = StubDrainTests.query(id: UInt16(id), "\(prefix)\(id).example.test")
            return [UInt8(query.count >> 8), UInt8(query.count & 0xFF)] + query
        }
    }

    private static func ids(_ answers: [[UInt8]]) -> [Int] {
        answers.map { Int($0[0]) << 8 | Int($0[1]) }.sorted()
    }

    /// Five queries on one connection, each for a name whose upstream answers after 1 s: all five
    /// come back after about 1 s, not at 1, 2, 3, 4 and 5 s.
    func testFivePipelinedSlowQueriesAreResolvedConcurrently() throws {
        let upstream = try SlowTXTUpstream(delay: .seconds(1))
        defer { upstream.stop() }
        let (_, port) = try startStub(upstream: upstream.port)
        let tcp = try RawSocket(datagram: false)
        XCTAssertTrue(tcp.connect(port: port, within: 3000))
        let began = ContinuousClock.now
        try tcp.sendAll(Self.framed(1...5, prefix: "slow"))
        let answers = tcp.receiveFramed(count: 5, within: 4000)
        let elapsed = ContinuousClock.now - began
        XCTAssertEqual(Self.ids(answers), [1, 2, 3, 4, 5], "every query answered, paired by ID")
        for answer in answers { XCTAssertEqual(answer[3] & 0x0F, 0, "NOERROR") }
        // One at a time took 5 s; together they take one upstream delay (and a loaded machine's slack).
        XCTAssertLessThan(elapsed, .milliseconds(3_000), "answered after \(elapsed)")
        XCTAssertGreaterThanOrEqual(upstream.received, 5)
    }

    /// Forty queries pipelined on one connection to an upstream that answers after 1 s, then
    /// SIGTERM: all forty are answered and the stub exits 0 (11 of 40 were, with exit 0, before).
    func testFortyPipelinedQueriesAreAllAnsweredAcrossTheDrain() throws {
        let upstream = try SlowTXTUpstream(delay: .seconds(1))
        defer { upstream.stop() }
        let (stub, port) = try startStub(upstream: upstream.port)
        let tcp = try RawSocket(datagram: false)
        XCTAssertTrue(tcp.connect(port: port, within: 3000))
        try tcp.sendAll(Self.framed(1...40, prefix: "drain"))
        try waitUntil("the upstream holds the forty queries", stub) { upstream.received >= 40 }
        stub.send(SIGTERM)
        let answers = tcp.receiveFramed(count: 40, within: 5000)
        XCTAssertEqual(Self.ids(answers), Array(1...40), "every pipelined query answered")
        for answer in answers { XCTAssertTrue(String(decoding: answer, as: UTF8.self).contains("slow"), "the upstream's TXT") }
        XCTAssertEqual(try stub.wait(timeout: .seconds(20)), 0, String(decoding: stub.stderr, as: UTF8.self))
        XCTAssertFalse(String(decoding: stub.stderr, as: UTF8.self).contains("unanswered"))
        XCTAssertEqual(stub.sanitizerReports, [])
    }

    /// Nothing cached and the only upstream blackholed (a socket that never answers): SERVFAIL
    /// with EDE 22 within the answer deadline (1.8 s), well inside glibc's 5 s per try, over UDP
    /// and TCP; `--help` states the bound and `--timeout`'s default.
    func testABlackholedUpstreamGetsSERVFAILWellInsideTheClientsTimeout() throws {
        let blackhole = try RawSocket(datagram: true)
        let blackholePort = try blackhole.bindLoopback()
        let (_, port) = try startStub(upstream: blackholePort)
        let udp = try RawSocket(datagram: true)
        var began = ContinuousClock.now
        // With EDNS (an OPT record, 1232 bytes), so that the answer can carry its Extended DNS Error.
        var query = StubDrainTests.query(id: 7, "nowhere.example.test")
        query[11] = 1
        query += [0, 0, 41, 0x04, 0xD0, 0, 0, 0, 0, 0, 0]
        try udp.sendDatagram(query, port: port)
        let answer = try XCTUnwrap(udp.receiveDatagram(within: 4500), "an answer before glibc's 5 s timeout")
        var elapsed = ContinuousClock.now - began
        XCTAssertEqual(answer[3] & 0x0F, 2, "SERVFAIL")
        XCTAssertLessThan(elapsed, .milliseconds(3_000), "answered after \(elapsed)")
        XCTAssertGreaterThanOrEqual(elapsed, .milliseconds(1_500), "not before the deadline: the upstream had its chance")
        XCTAssertTrue(String(decoding: answer, as: UTF8.self).contains("no answer within 1800 ms"), "the EDE text")
        // The EDE option: code 15, INFO-CODE 22.
        XCTAssertNotNil(answer.indices.dropLast(5).first { answer[$0] == 0 && answer[$0 + 1] == 15 && answer[$0 + 4] == 0 && answer[$0 + 5] == 22 })

        let tcp = try RawSocket(datagram: false)
        XCTAssertTrue(tcp.connect(port: port, within: 3000))
        began = ContinuousClock.now
        try tcp.sendAll(Self.framed(8...8, prefix: "nowhere"))
        let framed = tcp.receiveFramed(count: 1, within: 4500)
        elapsed = ContinuousClock.now - began
        XCTAssertEqual(framed.first.map { $0[3] & 0x0F }, 2, "SERVFAIL over TCP")
        XCTAssertLessThan(elapsed, .milliseconds(3_000), "answered after \(elapsed)")

        let help = try run(["stub", "--help"]).stdoutText
        XCTAssertTrue(help.contains("1.8 s"), help)
        let timeoutHelp = help.components(separatedBy: "--timeout <seconds>").dropFirst().first?.components(separatedBy: "\n  -").first ?? ""
        XCTAssertTrue(timeoutHelp.contains("Default 5."), timeoutHelp)
        XCTAssertTrue(timeoutHelp.replacingOccurrences(of: "\n", with: " ").contains("1.8 s"), timeoutHelp)
    }

    /// An A query with RD for `name`.
    private static func addressQuery(id: UInt16, _ name: String) -> [UInt8] {
        var query = StubDrainTests.query(id: id, name)
        query[query.count - 3] = 1  // QTYPE A
        return query
    }

    /// `--hosts` is read again on SIGHUP (it was read only at start); the entries in use stay when
    /// the new file cannot be read.
    func testHostsAreReadAgainOnSIGHUP() throws {
        let silent = try RawSocket(datagram: true)
        let directory = try temporaryDirectory()
        let hosts = directory.appendingPathComponent("hosts")
        try Data("127.0.0.77 box.example.test\n".utf8).write(to: hosts)
        let (stub, port) = try startStub(upstream: try silent.bindLoopback(), ["--hosts", hosts.path])
        let udp = try RawSocket(datagram: true)
        func address() throws -> [UInt8] {
            try udp.sendDatagram(Self.addressQuery(id: 9, "box.example.test"), port: port)
            let answer = try XCTUnwrap(udp.receiveDatagram(within: 3000))
            return Array(answer.suffix(4))
        }
        XCTAssertEqual(try address(), [127, 0, 0, 77])
        try Data("127.0.0.78 box.example.test\n".utf8).write(to: hosts)
        stub.send(SIGHUP)
        try waitUntil("SIGHUP read the file again", stub) { String(decoding: stub.stderr, as: UTF8.self).contains("--hosts read again") }
        XCTAssertEqual(try address(), [127, 0, 0, 78])
        try FileManager.default.removeItem(at: hosts)
        stub.send(SIGHUP)
        try waitUntil("a missing file is told", stub) { String(decoding: stub.stderr, as: UTF8.self).contains("entries in use are kept") }
        XCTAssertEqual(try address(), [127, 0, 0, 78], "the entries in use are kept")
        XCTAssertTrue(stub.isRunning)
    }

    /// A stub whose every upstream fails says so on stderr, once, not per query.
    func testEveryUpstreamFailingIsToldOnceOnStderr() throws {
        let closed = try RawSocket(datagram: true)
        let port = try closed.bindLoopback()
        closed.closeNow()
        let (stub, stubPort) = try startStub(upstream: port, ["--timeout", "0.5"])
        let udp = try RawSocket(datagram: true)
        for id in 1...3 {
            try udp.sendDatagram(StubDrainTests.query(id: UInt16(id), "fail\(id).example.test"), port: stubPort)
            XCTAssertEqual(udp.receiveDatagram(within: 3000).map { $0[3] & 0x0F }, 2, "SERVFAIL")
        }
        try waitUntil("the failure is told", stub) { String(decoding: stub.stderr, as: UTF8.self).contains("no upstream answered") }
        let told = String(decoding: stub.stderr, as: UTF8.self).components(separatedBy: "no upstream answered").count - 1
        XCTAssertEqual(told, 1, String(decoding: stub.stderr, as: UTF8.self))
    }
}
