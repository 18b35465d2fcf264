#if canImport(Glibc)
import Glibc
#endif
import DNSWire
import Foundation
import HTTPDNSCore
import HTTPDNSStub
import HTTPDNSTestSupport
import XCTest

/// A `doq=` upstream in process, where no DoQ server answers: a port nobody listens on fails at
/// once (ICMP port unreachable; the group then asks the next upstream), a server that answers
/// every datagram with random bytes is survived and the query times out at its deadline, and a
/// cancelled query ends at once. Against the aioquic test server: an answer, its ID given back as
/// the caller's (0 on the wire), and answer streams that break the framing (ended half-way, longer
/// than a DNS message) failing their query at once. The stub binary's exchanges are in
/// `StubDoQUpstreamTests`.
final class DNSStubQUICUpstreamTests: XCTestCase {
    private func upstream(port: Int) throws -> any DNSStubUpstream {
        try DNSStubUpstreamSpec(parsing: "doq=127.0.0.1:\(port)#doq.test").makeUpstream(transport: nil)
    }

    private func query() throws -> DNSMessage {
        DNSMessage.makeQuery(name: try DNSName("a.doq.test"), type: .A)
    }

    /// A UDP socket on 127.0.0.1 that answers each datagram with `reply` bytes of garbage (or
    /// nothing when 0), until the returned closure stops it.
    private func garbageServer(reply: Int) throws -> (port: Int, stop: () -> Void) {
        let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        guard fd >= 0 else { throw ToolRunner.Failure("socket") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        guard bound else {
            close(fd)
            throw ToolRunner.Failure("bind")
        }
        var timeout = timeval(tv_sec: 0, tv_usec: 50_000)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let running = HTTPDNSLock(true)
        let done = DispatchSemaphore(value: 0)
        Thread {
            var buffer = [UInt8](repeating: 0, count: 2048)
            var generator = SystemRandomNumberGenerator()
            while running.withLock({ $0 }) {
                var peer = sockaddr_storage()
                var peerLength = socklen_t(MemoryLayout<sockaddr_storage>.size)
                let count = withUnsafeMutablePointer(to: &peer) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { recvfrom(fd, &buffer, buffer.count, 0, $0, &peerLength) }
                }
                guard count > 0, reply > 0 else { continue }
                var garbage = (0..<reply).map { _ in UInt8.random(in: 0...255, using: &generator) }
                // Half of them look like QUIC long-header packets of version 1.
                if Bool.random(using: &generator) { garbage.replaceSubrange(0..<5, with: [0xC0, 0, 0, 0, 1]) }
                _ = withUnsafeMutablePointer(to: &peer) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { sendto(fd, garbage, garbage.count, 0, $0, peerLength) }
                }
            }
            close(fd)
            done.signal()
        }.start()
        return (Int(UInt16(bigEndian: address.sin_port)), {
            running.withLock { $0 = false }
            done.wait()
        })
    }

    /// dnsmasq answering `a.doq.test`, and the DoQ test server in front of it answering as `answers`
    /// says, with a certificate for `doq.test` from a fresh CA; its CA file.
    private func doqServer(_ answers: DoQTestServer.Answers) throws -> (DoQTestServer, String) {
        var configuration = Dnsmasq.Configuration()
        configuration.hostRecords = [("a.doq.test", [HTTPDNSIPAddress("10.2.0.100")!])]
        let dnsmasq = try Dnsmasq(configuration)
        addTeardownBlock { dnsmasq.stop() }
        let certificates = try TestCertificates()
        addTeardownBlock { certificates.remove() }
        let leaf = try certificates.issue(dnsNames: ["doq.test"])
        let server = try DoQTestServer(certificatePath: leaf.certificatePath, keyPath: leaf.keyPath, upstreamPort: dnsmasq.port, answers: answers)
        addTeardownBlock { server.stop() }
        return (server, certificates.caCertificatePath)
    }

    func testAnswersAndBrokenAnswerStreamsFailTheirQueryAtOnce() async throws {
        let (good, goodCA) = try doqServer(.normal)
        let upstream = try DNSStubUpstreamSpec(parsing: "doq=127.0.0.1:\(good.port)#doq.test").makeUpstream(transport: nil, trust: .caFile(goodCA))
        var asked = try query()
        asked.id = 0x1234
        let answer = try await upstream.exchange(asked, timeout: .seconds(5))
        XCTAssertEqual(answer.id, 0, "the stub's upstreams answer with ID 0; the caller restores its own")
        XCTAssertEqual(answer.questions, asked.questions)
        XCTAssertEqual(answer.answers.count, 1, "\(answer)")
        XCTAssertEqual(good.violations, [], "ID 0, FIN and the length on the wire")

        for mode in [DoQTestServer.Answers.truncated, .overlong] {
            let (server, caPath) = try doqServer(mode)
            let broken = try DNSStubUpstreamSpec(parsing: "doq=127.0.0.1:\(server.port)#doq.test").makeUpstream(transport: nil, trust: .caFile(caPath))
            let start = ContinuousClock.now
            do {
                _ = try await broken.exchange(try query(), timeout: .seconds(5))
                XCTFail("\(mode): an answer from a broken stream")
            } catch let error as HTTPDNSError {
                // A stream that ends short fails; one that runs long fails, or (when its first
                // 65,537 bytes arrive alone) carries 65,535 random bytes that are no DNS answer.
                XCTAssertTrue([.transport, .malformedAnswer].contains(error.code), "\(mode): \(error)")
            }
            XCTAssertLessThan(ContinuousClock.now - start, .seconds(3), "\(mode): failed at once, not at the timeout")
            XCTAssertEqual(server.queries, 1, "\(mode): \(server.log)")
        }
    }

    func testRefusedPortFailsAtOnce() async throws {
        let port = try Dnsmasq.freePort(on: HTTPDNSIPAddress("127.0.0.1")!)
        let upstream = try upstream(port: Int(port))
        XCTAssertEqual(upstream.name, "doq=127.0.0.1:\(port)#doq.test")
        let start = ContinuousClock.now
        do {
            _ = try await upstream.exchange(try query(), timeout: .seconds(5))
            XCTFail("an answer from a closed port")
        } catch let error as HTTPDNSError {
            XCTAssertEqual(error.code, .transport, "\(error)")
            XCTAssertTrue(error.detail.contains("refused"), error.detail)
            XCTAssertEqual(error.source, upstream.name)
        }
        XCTAssertLessThan(ContinuousClock.now - start, .seconds(2), "not waiting for the timeout")
    }

    func testGarbageServerIsSurvivedAndTimesOutAtTheDeadline() async throws {
        let server = try garbageServer(reply: 1200)
        defer { server.stop() }
        let upstream = try upstream(port: server.port)
        let start = ContinuousClock.now
        do {
            _ = try await upstream.exchange(try query(), timeout: .milliseconds(400))
            XCTFail("an answer from garbage")
        } catch let error as HTTPDNSError {
            XCTAssertEqual(error.code, .timedOut, "\(error)")
        }
        let elapsed = ContinuousClock.now - start
        XCTAssertGreaterThanOrEqual(elapsed, .milliseconds(350))
        XCTAssertLessThan(elapsed, .seconds(2))
    }

    func testCancelledQueryEndsAtOnce() throws {
        let server = try garbageServer(reply: 0)
        defer { server.stop() }
        let upstream = try upstream(port: server.port)
        let result = HTTPDNSLock<Result<DNSMessage, any Error>?>(nil)
        let done = expectation(description: "completion")
        let cancellation = upstream.exchange(try query(), timeout: .seconds(10)) { outcome in
            result.withLock { $0 = outcome }
            done.fulfill()
        }
        usleep(50_000)
        let start = ContinuousClock.now
        cancellation.cancel()
        wait(for: [done], timeout: 2)
        XCTAssertLessThan(ContinuousClock.now - start, .milliseconds(500))
        guard case .failure(let error as HTTPDNSError) = result.withLock({ $0 }) else {
            return XCTFail("\(String(describing: result.withLock { $0 }))")
        }
        XCTAssertEqual(error.code, .cancelled)
        cancellation.cancel()
    }
}

