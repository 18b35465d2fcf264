#if canImport(Glibc)
import Glibc
#endif
import DNSWire
import Dispatch
import Foundation
import HTTPDNSCore
import HTTPDNSTestSupport
import XCTest

/// `httpdns stub`, the built binary, with a DNS-over-TLS upstream (issue 34): dnsdist 1.7's DoT
/// frontend (`addTLSLocal`, a certificate from a test CA given with --cacert) in front of a
/// dnsmasq. Answers through `dot=`, concurrent queries on one connection (dnsdist's own count of
/// TLS sessions), a new connection resuming the first one's session once dnsdist closed the idle one, a certificate not valid for
/// NAME refused with an EDE text and counted, and dnsdist stopped: the next upstream of the group
/// answers.
final class StubDoTUpstreamTests: ToolTestCase {
    static let names = (0..<20).map { "q\($0).dot.test" }

    /// The address dnsmasq gives `names[index]` (`a.dot.test` is 10.1.0.100, `b.dot.test` 10.1.0.101).
    static func address(_ index: Int) -> String { "10.1.0.\(index + 1)" }

    struct Bed {
        var dnsdist: Dnsdist
        var caPath: String
    }

    /// dnsmasq with every name, dnsdist's DoT frontend in front of it with a certificate for
    /// `dot.test` from a fresh test CA.
    func startBed() throws -> Bed {
        let authority = try dnsmasq { configuration in
            configuration.hostRecords = [
                ("a.dot.test", [HTTPDNSIPAddress("10.1.0.100")!]), ("b.dot.test", [HTTPDNSIPAddress("10.1.0.101")!]),
            ]
            for (index, name) in Self.names.enumerated() {
                configuration.hostRecords.append((name, [HTTPDNSIPAddress(Self.address(index))!]))
            }
        }
        let certificates = try TestCertificates()
        addCleanup { certificates.remove() }
        let leaf = try certificates.issue(dnsNames: ["dot.test"])
        let dnsdist = try Dnsdist(.init(
            backendAddress: authority.address, backendPort: authority.port, checkName: "a.dot.test",
            certificatePath: leaf.certificatePath, keyPath: leaf.keyPath))
        addCleanup { dnsdist.stop() }
        return Bed(dnsdist: dnsdist, caPath: certificates.caCertificatePath)
    }

    /// The stub with `arguments` (nothing protected: every query goes to the upstreams), its DNS
    /// port and its metrics port.
    func startStub(_ arguments: [String]) throws -> (RunningTool, Int, Int) {
        let base = try startService(zone: "{}")
        let stub = try runner.start([
            "stub", "--listen", "127.0.0.1:0", "--provider", "dnspod=\(base)", "--allow-private", "--protect", "nothing.invalid",
            "--timeout", "2", "--metrics", "127.0.0.1:0",
        ] + arguments)
        addCleanup {
            stub.send(SIGTERM)
            _ = try? stub.wait(timeout: .seconds(20))
        }
        let line = try stub.waitForLine(startingWith: "listening on ")
        let port = try XCTUnwrap(line.split(separator: ":").last.flatMap { Int($0) }, line)
        let metrics = try stub.waitForLine(startingWith: "metrics on ")
        let metricsPort = try XCTUnwrap(metrics.split(separator: ":").last.flatMap { Int($0.split(separator: "/").first ?? "") }, metrics)
        return (stub, port, metricsPort)
    }

    func scrape(_ port: Int, _ path: String = "/metrics") throws -> String {
        let client = try RawHTTPClient(port: port)
        XCTAssertTrue(client.send("GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"))
        let response = client.readResponse(timeout: 5)
        XCTAssertEqual(response.status, 200, response.body)
        return response.body
    }

    /// The A addresses of `name` through the stub over UDP.
    static func addresses(_ name: String, port: Int) throws -> [String] {
        let message = try XCTUnwrap(StubWire.udp(name, .A, port: port).message, "no answer for \(name)")
        return message.answers.compactMap { record in
            guard case .a(let bytes) = record.data else { return nil }
            return bytes.map(String.init).joined(separator: ".")
        }
    }

    func testAnswersThroughDoTWithConcurrentQueriesOnOneConnection() throws {
        let bed = try startBed()
        let upstream = "dot=127.0.0.1:\(bed.dnsdist.tlsPort)#dot.test"
        let (_, port, metricsPort) = try startStub(["--upstream", upstream, "--cacert", bed.caPath])
        // Twenty queries at once: the first opens the connection, the others wait in the pipeline
        // during its handshake and go out on it together.
        let answers = HTTPDNSLock<[Int: [String]]>([:])
        let failures = HTTPDNSLock<[String]>([])
        DispatchQueue.concurrentPerform(iterations: Self.names.count) { index in
            do {
                let found = try Self.addresses(Self.names[index], port: port)
                answers.withLock { $0[index] = found }
            } catch {
                failures.withLock { $0.append("\(Self.names[index]): \(error)") }
            }
        }
        XCTAssertEqual(failures.withLock { $0 }, [])
        for index in Self.names.indices {
            XCTAssertEqual(answers.withLock { $0[index] }, [Self.address(index)], Self.names[index])
        }
        XCTAssertEqual(try Self.addresses("a.dot.test", port: port), ["10.1.0.100"], "one more, on the same connection")
        let frontend = try bed.dnsdist.tlsFrontend()
        XCTAssertEqual(frontend["queries"] as? Int, Self.names.count + 1, "\(frontend)")
        XCTAssertEqual(frontend["tlsNewSessions"] as? Int, 1, "one TLS connection for every query: \(frontend)")
        let metrics = try scrape(metricsPort)
        let answered = "httpdns_stub_upstream_queries_total{upstream=\"\(upstream)\",result=\"answered\"} \(Self.names.count + 1)\n"
        XCTAssertTrue(metrics.contains(answered), "\(answered) in\n\(metrics)")
        // dnsdist closes the idle connection after its idle timeout (3 s): once its own count says
        // the connection is gone, the next query opens a new one.
        let closed = ContinuousClock.now + .seconds(15)
        while try (bed.dnsdist.tlsFrontend()["tcpCurrentConnections"] as? Int) != 0 {
            guard ContinuousClock.now < closed else { return XCTFail("dnsdist kept the idle connection open: \(try bed.dnsdist.tlsFrontend())") }
            usleep(200_000)
        }
        XCTAssertEqual(try Self.addresses("b.dot.test", port: port), ["10.1.0.101"], "asked after the server's close")
        let reconnected = try bed.dnsdist.tlsFrontend()
        XCTAssertEqual(reconnected["queries"] as? Int, Self.names.count + 2, "\(reconnected)")
        // The new connection resumes the first one's session (RFC 7858 §3.4): no second full handshake.
        XCTAssertEqual(reconnected["tlsNewSessions"] as? Int, 1, "a full handshake after the server closed the first: \(reconnected)")
        XCTAssertEqual(reconnected["tlsResumptions"] as? Int, 1, "the new connection did not resume the session: \(reconnected)")
        let status = try jsonObject(try scrape(metricsPort, "/status"))
        let row = try XCTUnwrap((status["upstreams"] as? [[String: Any]])?.first, "\(status)")
        XCTAssertEqual(row["kind"] as? String, "dot", "\(row)")
        XCTAssertEqual(row["upstream"] as? String, upstream, "\(row)")
    }

    /// dig's full output for `name` through the stub (it shows the EDE).
    func dig(_ port: Int, _ name: String) throws -> String {
        let tool = "/usr/bin/dig"
        guard FileManager.default.isExecutableFile(atPath: tool) else {
            XCTFail("\(tool) not found: install the Debian package bind9-dnsutils")
            throw ToolRunner.Failure("dig missing")
        }
        return try ToolRunner(executable: URL(fileURLWithPath: tool))
            .run(["@127.0.0.1", "-p", "\(port)", "+time=4", "+tries=1", name, "A"], timeout: .seconds(30)).stdoutText
    }

    func testCertificateNotValidForTheNameIsRefused() throws {
        let bed = try startBed()
        let upstream = "dot=127.0.0.1:\(bed.dnsdist.tlsPort)#wrong.test"
        let (_, port, metricsPort) = try startStub(["--upstream", upstream, "--cacert", bed.caPath])
        let output = try dig(port, "a.dot.test")
        XCTAssertTrue(output.contains("status: SERVFAIL"), output)
        XCTAssertTrue(output.contains("EDE: 23"), output)
        XCTAssertTrue(output.contains("certificate verify failed: hostname mismatch"), output)
        let metrics = try scrape(metricsPort)
        let counted = "httpdns_stub_upstream_queries_total{upstream=\"\(upstream)\",result=\"error\"} 1\n"
        XCTAssertTrue(metrics.contains(counted), "\(counted) in\n\(metrics)")
        XCTAssertEqual(try bed.dnsdist.tlsFrontend()["queries"] as? Int, 0, "no query sent over a refused connection")

        // The right name, but the CA is not trusted (no --cacert): refused too.
        let (_, untrustedPort, _) = try startStub(["--upstream", "dot=127.0.0.1:\(bed.dnsdist.tlsPort)#dot.test"])
        let untrusted = try dig(untrustedPort, "a.dot.test")
        XCTAssertTrue(untrusted.contains("status: SERVFAIL"), untrusted)
        XCTAssertTrue(untrusted.contains("certificate verify failed"), untrusted)
    }

    func testDnsdistStoppedTheNextUpstreamAnswers() throws {
        let bed = try startBed()
        // The other upstream's port stays empty until dnsdist stops, so that the ranking can be
        // brought to ask DoT first (``StubRankingReader``): a query the other gets first fails there.
        let placeholder = try dnsmasq { _ in }
        let otherPort = placeholder.port
        placeholder.stop()
        let upstream = "dot=127.0.0.1:\(bed.dnsdist.tlsPort)#dot.test"
        let fallback = "udp=127.0.0.1:\(otherPort)"
        let (_, port, metricsPort) = try startStub(["--upstream", upstream, "--upstream", fallback, "--cacert", bed.caPath])
        XCTAssertEqual(try Self.addresses(Self.names[0], port: port), [Self.address(0)], "through DoT, the first upstream")
        var next = 2
        while !StubRankingReader.asksFirst(upstream, before: fallback, in: try scrape(metricsPort)), next < Self.names.count {
            XCTAssertEqual(try Self.addresses(Self.names[next], port: port), [Self.address(next)], "answered through DoT")
            next += 1
        }
        let ranked = try scrape(metricsPort)
        XCTAssertTrue(StubRankingReader.asksFirst(upstream, before: fallback, in: ranked), "DoT never ranked first:\n\(ranked)")
        _ = try dnsmasq {
            $0.port = otherPort
            $0.lie("dot.test", to: HTTPDNSIPAddress("10.9.9.9")!)
        }
        bed.dnsdist.stop()
        XCTAssertEqual(try Self.addresses(Self.names[1], port: port), ["10.9.9.9"], "dnsdist gone: the next upstream")
        let metrics = try scrape(metricsPort)
        let failed = "httpdns_stub_upstream_queries_total{upstream=\"\(upstream)\",result=\"error\"} 1\n"
        XCTAssertTrue(metrics.contains(failed), "\(failed) in\n\(metrics)")
    }
}
