import DNSSockets
import DNSWire
import HTTPDNSCore
import XCTest

/// RFC 5452 reply matching, timeouts, cancellation and the TCP path, against a scripted server.
final class DNSSocketClientSpoofingTests: XCTestCase {
    private let loopback = HTTPDNSIPAddress("127.0.0.1")!

    func testSpoofedRepliesAreIgnored() async throws {
        let server = try FakeDNSServer(udp: { query in
            var otherQuestion = query
            otherQuestion.questions[0].name = try! DNSName("evil.test")
            var notResponse = try! DNSMessage(decoding: answer(query, addresses: [[6, 6, 6, 1]]))
            notResponse.isResponse = false
            return [
                (false, answer(query, id: query.id &+ 1, addresses: [[6, 6, 6, 6]])),  // wrong ID
                (true, answer(query, addresses: [[6, 6, 6, 7]])),  // right ID, wrong source port
                (false, answer(otherQuestion, addresses: [[6, 6, 6, 8]])),  // wrong question
                (false, try! notResponse.encode()),  // QR=0
                (false, [0xFF, 0xFF, 1]),  // garbage
                (false, answer(query, addresses: [[192, 0, 2, 1]])),  // the real one
            ]
        })
        defer { server.stop() }
        let message = try await DNSSocketClient().resolve("www.example.test", type: .A, server: loopback, port: server.port, timeout: .seconds(5))
        XCTAssertEqual(message.answers.map(\.data), [.a([192, 0, 2, 1])])
    }

    func testOnlySpoofedRepliesMeanTimeout() async throws {
        let server = try FakeDNSServer(udp: { query in
            [(false, answer(query, id: query.id &+ 1, addresses: [[6, 6, 6, 6]])), (true, answer(query, addresses: [[6, 6, 6, 7]]))]
        })
        defer { server.stop() }
        await assertCode(.timedOut) {
            _ = try await DNSSocketClient().resolve("www.example.test", type: .A, server: self.loopback, port: server.port, timeout: .milliseconds(400))
        }
    }

    func testSilentServerTimesOut() async throws {
        let server = try FakeDNSServer(udp: { _ in [] })
        defer { server.stop() }
        await assertCode(.timedOut) {
            _ = try await DNSSocketClient().resolve("www.example.test", type: .A, server: self.loopback, port: server.port, timeout: .milliseconds(300))
        }
        XCTAssertEqual(server.queries.withLock { $0.count }, 1)
    }

    func testMalformedReplyWithMatchingIDIsReportedAtDeadline() async throws {
        let server = try FakeDNSServer(udp: { query in
            [(false, Array(answer(query, addresses: [[1, 2, 3, 4]]).dropLast()))]
        })
        defer { server.stop() }
        await assertCode(.malformedAnswer) {
            _ = try await DNSSocketClient().resolve("www.example.test", type: .A, server: self.loopback, port: server.port, timeout: .milliseconds(300))
        }
    }

    func testCancellationEndsTheWait() async throws {
        let server = try FakeDNSServer(udp: { _ in [] })
        defer { server.stop() }
        let loopback = loopback
        let task = Task {
            try await DNSSocketClient().resolve("www.example.test", type: .A, server: loopback, port: server.port, timeout: .seconds(60))
        }
        while server.queries.withLock({ $0.isEmpty }) { try await Task.sleep(for: .milliseconds(10)) }
        task.cancel()
        await assertCode(.cancelled) { _ = try await task.value }
    }

    func testClosedPortIsATransportError() async throws {
        let port = try FakeDNSServer(udp: { _ in [] }).closedPort()
        await assertCode(.transport) {
            _ = try await DNSSocketClient().resolve("www.example.test", type: .A, server: self.loopback, port: port, timeout: .seconds(5))
        }
    }

    /// TC=1 over UDP, then a TCP answer written one byte at a time: the length prefix and the
    /// message arrive split across many reads.
    func testTruncatedUDPAnswerIsFetchedOverTCPByteByByte() async throws {
        let server = try FakeDNSServer(
            udp: { query in [(false, answer(query, addresses: [[10, 0, 0, 1]], truncated: true))] },
            tcp: { query in
                let full = answer(query, addresses: (1...40).map { [198, 51, 100, UInt8($0)] })
                // A stray message with another ID first: it must be skipped, not accepted.
                return [0, 12] + [0xAB, 0xCD] + Array(repeating: 0, count: 10) + [UInt8(full.count >> 8), UInt8(full.count & 0xFF)] + full
            }
        )
        defer { server.stop() }
        let message = try await DNSSocketClient().resolve("many.example.test", type: .A, server: loopback, port: server.port, timeout: .seconds(10))
        XCTAssertFalse(message.isTruncated)
        XCTAssertEqual(message.answers.count, 40)
        let transports = server.queries.withLock { $0.count }
        XCTAssertEqual(transports, 2, "one UDP and one TCP query")
    }

    func testRandomIDsDiffer() {
        let ids = Set((0..<64).map { _ in DNSSocketClient.randomID() })
        XCTAssertGreaterThan(ids.count, 50)
    }

    private func assertCode(_ code: HTTPDNSError.Code, file: StaticString = #filePath, line: UInt = #line, _ body: () async throws -> Void) async {
        do {
            try await body()
            XCTFail("expected \(code)", file: file, line: line)
        } catch let error as HTTPDNSError {
            XCTAssertEqual(error.code, code, "\(error)", file: file, line: line)
        } catch {
            XCTFail("unexpected \(error)", file: file, line: line)
        }
    }
}

extension FakeDNSServer {
    /// Stops the server and returns its port, now closed.
    func closedPort() -> UInt16 {
        stop()
        return port
    }
}
