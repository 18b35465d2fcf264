import Foundation
import HTTPDNS
import HTTPDNSCore
import HTTPDNSProxyTestBed
import HTTPDNSTestSupport
import HTTPDNSNetworking
@testable import HTTPDNSLoopbackProxy
@testable import HTTPDNSDirect
import XCTest

/// The proxy in this process, driven by curl and raw sockets, in a network whose resolver lies.
///
/// Synchronous tests on purpose: they block on sockets and child processes, which must not happen
/// on the cooperative pool the proxy's connector tasks run on.
final class ProxyTests: XCTestCase {
    var bed: ProxyTestBed!
    var monitor: RecordingProxyMonitor!

    override func setUpWithError() throws {
        bed = try ProxyTestBed()
        monitor = RecordingProxyMonitor()
    }

    override func tearDown() {
        bed?.stop()
    }

    /// An engine protecting `protected` over the bed's HTTPDNS service, the lying dnsmasq as LocalDNS.
    func makeEngine(protected: [String] = ["*.proxied.test"]) throws -> HTTPDNSEngine {
        var configuration = HTTPDNSConfiguration(resolvers: [try HTTPDNSProviderSpec(parsing: bed.providerSpec).makeResolver()])
        configuration.localDNS = .server(bed.dnsmasq.address, port: bed.dnsmasq.port)
        configuration.hygiene = .init(allowPrivate: true)
        configuration.protectedHosts = HTTPDNSHostPolicy(protected)
        return HTTPDNSEngine(configuration: configuration)
    }

    func startProxy(
        protected: [String] = ["*.proxied.test"], configure: (inout HTTPDNSProxy.Configuration) -> Void = { _ in }
    ) throws -> HTTPDNSProxy {
        var configuration = HTTPDNSProxy.Configuration()
        configuration.allowPrivateTargets = true
        configuration.connectTimeout = .seconds(3)
        configuration.monitor = monitor
        configure(&configuration)
        let proxy = HTTPDNSProxy(engine: try makeEngine(protected: protected), configuration: configuration)
        try proxy.start()
        addTeardownBlock { proxy.stop() }
        return proxy
    }

    func curl(_ proxy: HTTPDNSProxy, _ arguments: [String]) throws -> ToolRunner.Result {
        try Curl.run(["--proxy", proxy.url!.absoluteString, "--cacert", bed.certificates.caCertificatePath] + arguments)
    }

    // MARK: - Reaching the real site

    func testCurlReachesTheRealSiteThroughATunnelUnderALyingResolver() throws {
        let proxy = try startProxy()
        let result = try curl(proxy, [bed.secureURL])
        XCTAssertEqual(result.status, 0, result.stderrText)
        XCTAssertEqual(result.stdoutText, ProxyTestBed.realBody)
        XCTAssertEqual(monitor.opened, [.init(host: ProxyTestBed.secureHost, address: ProxyTestBed.origin, attempts: 1)])
        // Without the proxy, the lying resolver's answer leads to the ad page.
        let hijacked = try Curl.run(["--resolve", "\(ProxyTestBed.plainHost):\(bed.httpPort):\(ProxyTestBed.hijack)", bed.plainURL])
        XCTAssertEqual(hijacked.stdoutText, ProxyTestBed.hijackBody)
    }

    func testPlainHTTPIsForwardedOneRequestPerConnection() throws {
        let proxy = try startProxy()
        // curl reuses nothing: each of two URLs gets its own connection and the real page.
        let result = try curl(proxy, [bed.plainURL, bed.plainURL])
        XCTAssertEqual(result.status, 0, result.stderrText)
        XCTAssertEqual(result.stdoutText, ProxyTestBed.realBody + ProxyTestBed.realBody)

        let credential = try XCTUnwrap(proxy.configuration.credential)
        let client = try RawClient(HTTPDNSIPAddress("127.0.0.1")!, port: proxy.port!)
        client.send("GET \(bed.plainURL) HTTP/1.1\r\nHost: \(ProxyTestBed.plainHost)\r\nConnection: keep-alive\r\n\(credential.fieldLine)\r\n")
        let (text, timedOut) = client.readToEnd()
        XCTAssertFalse(timedOut, "the proxy closes after one forwarded response")
        XCTAssertTrue(text.hasPrefix("HTTP/1.1 200 OK\r\n"), text)
        XCTAssertTrue(text.contains("\r\nConnection: close\r\n"), text)
        XCTAssertFalse(text.lowercased().contains("keep-alive"), text)
        XCTAssertTrue(text.hasSuffix(ProxyTestBed.realBody), text)
    }

    /// Header values past ASCII reach the origin and come back byte for byte, as without a proxy.
    func testForwardedHeaderBytesPassUnchanged() throws {
        let latin1: [UInt8] = Array("r".utf8) + [0xE9] + Array("sum".utf8) + [0xE9] + Array(".txt".utf8)
        let invalid: [UInt8] = [0x61, 0xC3, 0x28, 0xFF]
        let answer = Array("HTTP/1.1 200 OK\r\nContent-Disposition: attachment; filename=\"".utf8) + latin1
            + Array("\"\r\nX-Raw: ".utf8) + invalid + Array("\r\nContent-Length: 2\r\n\r\nok".utf8)
        let origin = try RawOrigin(answer: answer)
        defer { origin.stop() }
        let proxy = try startProxy()
        let credential = try XCTUnwrap(proxy.configuration.credential)
        let client = try RawClient(HTTPDNSIPAddress("127.0.0.1")!, port: proxy.port!)
        client.send(bytes: Array("GET http://127.0.0.1:\(origin.port)/f HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Name: caf".utf8) + [0xE9]
            + Array("\r\nX-Raw: ".utf8) + invalid + Array("\r\n\(credential.fieldLine)\r\n".utf8))
        let (bytes, timedOut) = client.readBytesToEnd()
        XCTAssertFalse(timedOut)
        XCTAssertEqual(
            bytes,
            Array("HTTP/1.1 200 OK\r\nContent-Disposition: attachment; filename=\"".utf8) + latin1 + Array("\"\r\nX-Raw: ".utf8)
                + invalid + Array("\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok".utf8))
        let request = try XCTUnwrap(origin.received.first)
        XCTAssertEqual(
            request,
            Array("GET /f HTTP/1.1\r\nHost: 127.0.0.1:\(origin.port)\r\nX-Name: caf".utf8) + [0xE9] + Array("\r\nX-Raw: ".utf8) + invalid
                + Array("\r\nConnection: close\r\n\r\n".utf8))
    }

    func testUnprotectedHostsAreResolvedByLocalDNS() throws {
        // Only www is protected: plain.proxied.test goes to the (lying) LocalDNS, as configured.
        let proxy = try startProxy(protected: [ProxyTestBed.secureHost])
        XCTAssertEqual(try curl(proxy, [bed.plainURL]).stdoutText, ProxyTestBed.hijackBody)
        XCTAssertEqual(try curl(proxy, [bed.secureURL]).stdoutText, ProxyTestBed.realBody)
    }

    func testFailoverToTheNextAddressCoolsTheDeadOneDown() throws {
        let proxy = try startProxy()
        let result = try curl(proxy, ["https://\(ProxyTestBed.failoverHost):\(bed.httpsPort)/"])
        XCTAssertEqual(result.status, 0, result.stderrText)
        XCTAssertEqual(result.stdoutText, ProxyTestBed.realBody)
        XCTAssertEqual(monitor.opened, [.init(host: ProxyTestBed.failoverHost, address: ProxyTestBed.origin, attempts: 2)])
        XCTAssertTrue(proxy.engine.isCoolingDown(ProxyTestBed.dead))
        // The next tunnel starts with the live address (the dead one cools down at the back).
        XCTAssertEqual(try curl(proxy, ["https://\(ProxyTestBed.failoverHost):\(bed.httpsPort)/"]).stdoutText, ProxyTestBed.realBody)
        XCTAssertEqual(monitor.opened.last?.attempts, 1)
    }

    func testLargeBodiesArriveIntactThroughATunnelAndForwarded() throws {
        let proxy = try startProxy()
        let expected = try Data(contentsOf: bed.bigFile)
        for url in ["https://\(ProxyTestBed.secureHost):\(bed.httpsPort)/big/file.bin", "\(bed.plainURL)big/file.bin"] {
            let output = bed.certificates.directory.appendingPathComponent("download.bin")
            let result = try curl(proxy, ["-o", output.path, url])
            XCTAssertEqual(result.status, 0, result.stderrText)
            XCTAssertEqual(try Data(contentsOf: output), expected, url)
        }
    }

    /// A client that reads slowly, through a small receive buffer: the proxy stops reading the
    /// origin while the client lags (its bytes wait in the pipe) and goes on when the client reads
    /// again; nothing is lost or reordered.
    func testSlowReaderGetsEveryByte() throws {
        let proxy = try startProxy()
        let expected = try Data(contentsOf: bed.bigFile)
        let client = try RawClient(HTTPDNSIPAddress("127.0.0.1")!, port: proxy.port!, receiveBuffer: 4096)
        client.send("CONNECT \(ProxyTestBed.plainHost):\(bed.httpPort) HTTP/1.1\r\n\(proxy.configuration.credential!.fieldLine)\r\n")
        XCTAssertEqual(client.read(until: "\r\n\r\n"), "HTTP/1.1 200 Connection established\r\n\r\n")
        client.send("GET /big/file.bin HTTP/1.1\r\nHost: \(ProxyTestBed.plainHost)\r\nConnection: close\r\n\r\n")
        usleep(300_000)  // the proxy fills the client's buffer and its pipe, then waits
        let (bytes, timedOut) = client.readBytesToEnd()
        XCTAssertFalse(timedOut)
        guard let end = bytes.firstRange(of: Array("\r\n\r\n".utf8))?.upperBound else { return XCTFail("no response head") }
        XCTAssertTrue(bytes.starts(with: Array("HTTP/1.1 200 ".utf8)), String(decoding: bytes.prefix(100), as: UTF8.self))
        XCTAssertEqual(Data(bytes[end...]), expected)
    }

    /// A client that half-closes right after its request still gets the whole answer, then the end.
    /// (nginx itself gives up on a half-closed client whose answer has to wait, so the answer is short.)
    func testHalfClosedClientGetsTheAnswer() throws {
        let proxy = try startProxy()
        let client = try RawClient(HTTPDNSIPAddress("127.0.0.1")!, port: proxy.port!)
        client.send("CONNECT \(ProxyTestBed.plainHost):\(bed.httpPort) HTTP/1.1\r\n\(proxy.configuration.credential!.fieldLine)\r\n"
            + "\r\nGET / HTTP/1.1\r\nHost: \(ProxyTestBed.plainHost)\r\nConnection: close\r\n\r\n")
        shutdown(client.fd, Int32(SHUT_WR))
        let (text, timedOut) = client.readToEnd()
        XCTAssertFalse(timedOut)
        XCTAssertTrue(text.hasPrefix("HTTP/1.1 200 Connection established\r\n\r\nHTTP/1.1 200 OK\r\n"), text)
        XCTAssertTrue(text.hasSuffix("\r\n\r\n" + ProxyTestBed.realBody), text)
    }

    func testIPv6Listener() throws {
        let proxy = try startProxy { $0.listenAddresses = [HTTPDNSIPAddress("::1")!] }
        XCTAssertTrue(proxy.url!.absoluteString.contains("@[::1]:"), proxy.url!.absoluteString)
        let result = try curl(proxy, [bed.secureURL])
        XCTAssertEqual(result.status, 0, result.stderrText)
        XCTAssertEqual(result.stdoutText, ProxyTestBed.realBody)
    }

    // MARK: - Safe by default

    func testCredentialIsRequired() throws {
        let proxy = try startProxy()
        let credential = try XCTUnwrap(proxy.configuration.credential)
        XCTAssertEqual(credential.password.count, 32)
        XCTAssertNotEqual(credential, HTTPDNSProxy.Credential.random())
        let port = proxy.port!
        for field in ["", "Proxy-Authorization: Basic \(Data("httpdns:wrong".utf8).base64EncodedString())\r\n",
                      "Proxy-Authorization: Bearer \(credential.password)\r\n", "Proxy-Authorization: Basic !!!\r\n"] {
            let client = try RawClient(HTTPDNSIPAddress("127.0.0.1")!, port: port)
            client.send("CONNECT \(ProxyTestBed.secureHost):\(bed.httpsPort) HTTP/1.1\r\n\(field)\r\n")
            let (text, _) = client.readToEnd()
            XCTAssertTrue(text.hasPrefix("HTTP/1.1 407 "), text)
            XCTAssertTrue(text.contains("\r\nProxy-Authenticate: Basic realm=\"httpdns\"\r\n"), text)
        }
        XCTAssertTrue(monitor.opened.isEmpty)
        XCTAssertEqual(monitor.refused, [407, 407, 407, 407])
        // curl without the credential fails; with it (scheme in any case) it goes through.
        let refused = try Curl.run(["--proxy", "http://127.0.0.1:\(port)", "--cacert", bed.certificates.caCertificatePath, bed.secureURL])
        XCTAssertNotEqual(refused.status, 0)
        XCTAssertTrue(refused.stderrText.contains("407"), refused.stderrText)
        let client = try RawClient(HTTPDNSIPAddress("127.0.0.1")!, port: port)
        client.send("CONNECT \(ProxyTestBed.secureHost):\(bed.httpsPort) HTTP/1.1\r\n"
            + credential.fieldLine.replacingOccurrences(of: "Basic", with: "bAsIc") + "\r\n")
        XCTAssertTrue(client.read(until: "\r\n\r\n").hasPrefix("HTTP/1.1 200 Connection established\r\n\r\n"))
    }

    func testNoCredentialWhenConfiguredSo() throws {
        let proxy = try startProxy { $0.credential = nil }
        XCTAssertFalse(proxy.url!.absoluteString.contains("@"))
        XCTAssertEqual(try curl(proxy, [bed.secureURL]).stdoutText, ProxyTestBed.realBody)
    }

    func testForbiddenTargets() throws {
        let strict = try startProxy { $0.allowPrivateTargets = false }
        let credential = try XCTUnwrap(strict.configuration.credential)
        func status(_ proxy: HTTPDNSProxy, _ target: String) throws -> String {
            let client = try RawClient(HTTPDNSIPAddress("127.0.0.1")!, port: proxy.port!)
            client.send("CONNECT \(target) HTTP/1.1\r\n\(credential.fieldLine)\r\n")
            return String(client.read(until: "\r\n\r\n").prefix(12))
        }
        // A protected name whose true address is loopback, loopback and private literals, the
        // unspecified address: all refused before any connection.
        XCTAssertEqual(try status(strict, "\(ProxyTestBed.secureHost):\(bed.httpsPort)"), "HTTP/1.1 403")
        XCTAssertEqual(try status(strict, "127.0.0.1:\(bed.httpsPort)"), "HTTP/1.1 403")
        XCTAssertEqual(try status(strict, "[::1]:\(bed.httpsPort)"), "HTTP/1.1 403")
        XCTAssertEqual(try status(strict, "10.1.2.3:443"), "HTTP/1.1 403")
        XCTAssertEqual(try status(strict, "0.0.0.0:443"), "HTTP/1.1 403")
        XCTAssertTrue(monitor.opened.isEmpty)
        // With loopback allowed, the proxy still never connects to itself.
        let lenient = try startProxy { $0.credential = credential }
        XCTAssertEqual(try status(lenient, "127.0.0.1:\(lenient.port!)"), "HTTP/1.1 403")
        XCTAssertEqual(try status(lenient, "127.0.0.9:\(lenient.port!)"), "HTTP/1.1 403")
        XCTAssertEqual(try status(lenient, "\(ProxyTestBed.origin):\(bed.httpsPort)"), "HTTP/1.1 200")
    }

    func testPolicyValues() {
        let policy = ProxyTargetPolicy(allowPrivate: false, listeners: [(HTTPDNSIPAddress("127.0.0.1")!, 8118)])
        XCTAssertTrue(policy.allows(HTTPDNSIPAddress("93.184.216.34")!, port: 443))
        XCTAssertTrue(policy.allows(HTTPDNSIPAddress("2606:2800:220:1::1")!, port: 443))
        for address in ["127.0.0.1", "::1", "10.0.0.1", "192.168.1.1", "172.16.0.1", "169.254.1.1", "fc00::1", "fe80::1", "0.0.0.0", "::",
                        "::ffff:127.0.0.1", "::ffff:10.0.0.1", "224.0.0.1"] {
            XCTAssertFalse(policy.allows(HTTPDNSIPAddress(address)!, port: 443), address)
        }
        let open = ProxyTargetPolicy(allowPrivate: true, listeners: [(HTTPDNSIPAddress("::")!, 8118)])
        XCTAssertTrue(open.allows(HTTPDNSIPAddress("127.0.0.1")!, port: 443))
        XCTAssertFalse(open.allows(HTTPDNSIPAddress("127.0.0.1")!, port: 8118))
        XCTAssertFalse(open.allows(HTTPDNSIPAddress("192.168.1.1")!, port: 8118), "a wildcard listener is every local address")
    }

    func testMalformedAndUnsupportedRequestsAreAnswered() throws {
        let proxy = try startProxy()
        let cases = [
            ("GET / HTTP/1.1\r\nHost: x\r\n\r\n", "HTTP/1.1 400"),
            ("CONNECT a.test:443 HTTP/1.1\nHost: x\n\n", "HTTP/1.1 400"),
            ("GET https://a.test/ HTTP/1.1\r\n\r\n", "HTTP/1.1 501"),
            ("CONNECT a.test:443 HTTP/2.0\r\n\r\n", "HTTP/1.1 505"),
            ("CONNECT a.test:443 HTTP/1.1\r\nX: " + String(repeating: "a", count: 20_000), "HTTP/1.1 431"),
        ]
        for (request, expected) in cases {
            let client = try RawClient(HTTPDNSIPAddress("127.0.0.1")!, port: proxy.port!)
            client.send(request)
            let (text, timedOut) = client.readToEnd()
            XCTAssertFalse(timedOut)
            XCTAssertTrue(text.hasPrefix(expected), "\(request.prefix(40).debugDescription): \(text)")
        }
    }

    // MARK: - Limits

    func testStalledClientIsCut() throws {
        let proxy = try startProxy { $0.headTimeout = .milliseconds(300) }
        let client = try RawClient(HTTPDNSIPAddress("127.0.0.1")!, port: proxy.port!, timeout: 20)
        client.send("CONNECT \(ProxyTestBed.secureHost):")  // and nothing more
        let (text, timedOut) = client.readToEnd()
        XCTAssertFalse(timedOut, "the proxy must close a client that never finishes its request head")
        XCTAssertTrue(text.hasPrefix("HTTP/1.1 408 "), text)
        XCTAssertEqual(monitor.refused, [408])
    }

    func testIdleTunnelIsClosed() throws {
        let proxy = try startProxy { $0.idleTimeout = .milliseconds(300) }
        let client = try RawClient(HTTPDNSIPAddress("127.0.0.1")!, port: proxy.port!, timeout: 20)
        client.send("CONNECT \(ProxyTestBed.secureHost):\(bed.httpsPort) HTTP/1.1\r\n\(proxy.configuration.credential!.fieldLine)\r\n")
        let (text, timedOut) = client.readToEnd()
        XCTAssertFalse(timedOut, "an idle tunnel must be closed")
        XCTAssertEqual(text, "HTTP/1.1 200 Connection established\r\n\r\n")
    }

    func testConnectionsAreBoundedWithAnExplicitRefusal() throws {
        let proxy = try startProxy { $0.maxConnections = 2 }
        let port = proxy.port!
        // Two open tunnels hold both slots. Each is known to be admitted before the third client
        // connects: the proxy's loops accept and admit concurrently, so two clients that have only
        // connected may not have been counted yet.
        let tunnel = "CONNECT \(ProxyTestBed.secureHost):\(bed.httpsPort) HTTP/1.1\r\n\(proxy.configuration.credential!.fieldLine)\r\n"
        let first = try RawClient(HTTPDNSIPAddress("127.0.0.1")!, port: port)
        first.send(tunnel)
        XCTAssertTrue(first.read(until: "\r\n\r\n").hasPrefix("HTTP/1.1 200 "))
        let second = try RawClient(HTTPDNSIPAddress("127.0.0.1")!, port: port)
        second.send(tunnel)
        XCTAssertTrue(second.read(until: "\r\n\r\n").hasPrefix("HTTP/1.1 200 "))
        let third = try RawClient(HTTPDNSIPAddress("127.0.0.1")!, port: port)
        let (text, timedOut) = third.readToEnd()
        XCTAssertFalse(timedOut)
        XCTAssertTrue(text.hasPrefix("HTTP/1.1 503 "), text)
        XCTAssertTrue(monitor.refused.contains(503))
        // Once a slot is free, the next client is served.
        first.close()
        var served = false
        for _ in 0..<100 where !served {
            let result = try curl(proxy, [bed.secureURL])
            served = result.stdoutText == ProxyTestBed.realBody
            if !served { usleep(50_000) }
        }
        XCTAssertTrue(served)
        withExtendedLifetime(second) {}
    }

    func testManyTunnelsAtOnce() throws {
        let proxy = try startProxy()
        let urls = Array(repeating: bed.secureURL, count: 200)
        let result = try curl(proxy, ["--parallel", "--parallel-immediate", "--parallel-max", "200"] + urls)
        XCTAssertEqual(result.status, 0, result.stderrText)
        XCTAssertEqual(result.stdoutText, String(repeating: ProxyTestBed.realBody, count: 200))
        XCTAssertFalse(monitor.opened.isEmpty)
    }
}
