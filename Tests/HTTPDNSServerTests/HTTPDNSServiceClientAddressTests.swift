#if canImport(Glibc)
import Glibc
#endif
import DNSWire
import Foundation
import HTTPDNS
import HTTPDNSCore
import HTTPDNSServer
import HTTPDNSTestSupport
import HTTPDNSTransport
import XCTest

/// The client's address behind a trusted proxy (Alibaba `client_ip`, DNSPod `clientip=1`), sent
/// upstream as EDNS Client Subnet (RFC 7871), and the negative cache of upstream failures.
final class HTTPDNSServiceClientAddressTests: HTTPDNSServiceTestCase {
    private var upstreams: [RecordingDNSServer] = []

    override func tearDown() {
        super.tearDown()
        for upstream in upstreams { upstream.stop() }
        upstreams = []
    }

    private func upstream(answering: Bool = true, answerOptions: [UInt8]? = nil) throws -> RecordingDNSServer {
        let server = try RecordingDNSServer(answering: answering, answerOptions: answerOptions)
        upstreams.append(server)
        return server
    }

    private func json(_ response: HTTPTransportResponse) throws -> [String: Any] {
        try XCTUnwrap(JSONSerialization.jsonObject(with: response.body) as? [String: Any], text(response))
    }

    func testAlibabaAndDNSPodReportTheForwardedClientOnlyFromTrustedProxies() async throws {
        let trusting = try startService { $0.trustedProxies = try! HTTPDNSTrustedProxies(["127.0.0.0/8"]) }
        let forwarded = ["X-Forwarded-For": "198.51.100.1, 203.0.113.7"]
        let alibaba = try await fetch(base(trusting) + "/100000/d?host=www.example.test", headers: forwarded)
        XCTAssertEqual(try json(alibaba)["client_ip"] as? String, "203.0.113.7")
        let dnspod = try await fetch(base(trusting) + "/d?dn=www.example.test&clientip=1", headers: forwarded)
        XCTAssertEqual(text(dnspod), "192.0.2.1;192.0.2.2|203.0.113.7")
        // Without the header, the peer itself.
        let direct = try await fetch(base(trusting) + "/100000/d?host=www.example.test")
        XCTAssertEqual(try json(direct)["client_ip"] as? String, "127.0.0.1")

        // A service trusting nobody ignores the header: a client cannot choose its address.
        let plain = try startService()
        let spoofed = try await fetch(base(plain) + "/100000/d?host=www.example.test", headers: forwarded)
        XCTAssertEqual(try json(spoofed)["client_ip"] as? String, "127.0.0.1")
        let spoofedDNSPod = try await fetch(base(plain) + "/d?dn=www.example.test&clientip=1", headers: forwarded)
        XCTAssertEqual(text(spoofedDNSPod), "192.0.2.1;192.0.2.2|127.0.0.1")
    }

    func testTheClientSubnetReachesAPlainDNSUpstreamAndAnswersAreCachedPerSubnet() async throws {
        let dns = try upstream()
        let service = try startService {
            $0.trustedProxies = try! HTTPDNSTrustedProxies(["127.0.0.1"])
            $0.upstream = .init(resolvers: [HTTPDNSUDPResolver(server: HTTPDNSIPAddress("127.0.0.1")!, port: dns.port)])
        }
        let first = try await fetch(base(service) + "/d?dn=up.example.test", headers: ["X-Forwarded-For": "203.0.113.77"])
        XCTAssertEqual(text(first), "192.0.2.55")
        let again = try await fetch(base(service) + "/d?dn=up.example.test", headers: ["X-Forwarded-For": "203.0.113.200"])
        XCTAssertEqual(text(again), "192.0.2.55")
        let other = try await fetch(base(service) + "/d?dn=up.example.test", headers: ["X-Forwarded-For": "2001:db8:aaaa:bbbb::1"])
        XCTAssertEqual(text(other), "192.0.2.55")
        // The peer itself (loopback) has no subnet worth sending.
        let local = try await fetch(base(service) + "/d?dn=up.example.test")
        XCTAssertEqual(text(local), "192.0.2.55")

        let subnets = dns.queries.withLock { $0 }.map { query in query.edns.map { Self.clientSubnet(in: $0.options) } ?? "no EDNS" }
        // The same /24 shares one cached answer; another subnet and no subnet are asked for apart.
        XCTAssertEqual(subnets, ["203.0.113.0/24", "2001:db8:aaaa:bb00::/56", "none"])
    }

    /// The first upstream is an HTTP service (the engine's fast path, answered on the transport's
    /// thread); when it fails, the failover to the next one still carries the subnet.
    func testTheClientSubnetSurvivesFailoverFromAnHTTPUpstream() async throws {
        let dns = try upstream()
        let closedPort = try Dnsmasq.freePort(on: HTTPDNSIPAddress("127.0.0.1")!)
        let broken = try resolver("doh=http://127.0.0.1:\(closedPort)/dns-query")
        let service = try startService {
            $0.trustedProxies = try! HTTPDNSTrustedProxies(["127.0.0.1"])
            $0.upstream = .init(resolvers: [broken, HTTPDNSUDPResolver(server: HTTPDNSIPAddress("127.0.0.1")!, port: dns.port)])
        }
        let answer = try await fetch(base(service) + "/d?dn=up.example.test", headers: ["X-Forwarded-For": "203.0.113.77"])
        XCTAssertEqual(text(answer), "192.0.2.55")
        XCTAssertEqual(dns.queries.withLock { $0 }.map { $0.edns.map { Self.clientSubnet(in: $0.options) } ?? "no EDNS" }, ["203.0.113.0/24"])
    }

    /// RFC 7871 §7.3: an answer whose Client Subnet was changed is dropped; an echo is accepted.
    func testAnswersWithAnotherClientSubnetAreDropped() async throws {
        let liar = try upstream(answerOptions: [0, 8, 0, 7, 0, 1, 24, 0, 198, 51, 100])
        let echo = try upstream(answerOptions: [0, 8, 0, 7, 0, 1, 24, 24, 203, 0, 113])
        func start(_ dns: RecordingDNSServer) throws -> HTTPDNSService {
            try startService {
                $0.trustedProxies = try! HTTPDNSTrustedProxies(["127.0.0.1"])
                $0.upstream = .init(resolvers: [HTTPDNSUDPResolver(server: HTTPDNSIPAddress("127.0.0.1")!, port: dns.port)])
            }
        }
        let lied = try await fetch(base(try start(liar)) + "/d?dn=up.example.test", headers: ["X-Forwarded-For": "203.0.113.77"])
        XCTAssertEqual(lied.statusCode, 502)
        let echoed = try await fetch(base(try start(echo)) + "/d?dn=up.example.test", headers: ["X-Forwarded-For": "203.0.113.77"])
        XCTAssertEqual(text(echoed), "192.0.2.55")
    }

    func testDoHClientsOptingOutOfClientSubnetAreRespected() async throws {
        let dns = try upstream()
        let service = try startService {
            $0.trustedProxies = try! HTTPDNSTrustedProxies(["127.0.0.1"])
            $0.upstream = .init(resolvers: [HTTPDNSUDPResolver(server: HTTPDNSIPAddress("127.0.0.1")!, port: dns.port)])
        }
        // RFC 8484 §8.2 / RFC 7871 §7.1.2: a query with a Client Subnet option of source prefix 0.
        let optOut = DNSEDNS(options: [0, 8, 0, 4, 0, 1, 0, 0])
        let query = DNSMessage.query(name: try DNSName("optout.example.test"), type: .A, edns: optOut)
        let response = try await fetch(
            base(service) + "/dns-query", method: "POST",
            headers: ["Content-Type": "application/dns-message", "Accept": "application/dns-message", "X-Forwarded-For": "203.0.113.77"],
            body: Data(query))
        XCTAssertEqual(response.statusCode, 200)
        XCTAssertEqual(try DNSMessage(decoding: Array(response.body)).rcode, .noError)
        let forwarded = DNSMessage.query(name: try DNSName("optin.example.test"), type: .A, edns: DNSEDNS())
        _ = try await fetch(
            base(service) + "/dns-query", method: "POST",
            headers: ["Content-Type": "application/dns-message", "X-Forwarded-For": "203.0.113.77"], body: Data(forwarded))
        let subnets = dns.queries.withLock { $0 }.map { query in query.edns.map { Self.clientSubnet(in: $0.options) } ?? "no EDNS" }
        XCTAssertEqual(subnets, ["none", "203.0.113.0/24"])
    }

    func testClientSubnetCanBeTurnedOff() async throws {
        let dns = try upstream()
        let service = try startService {
            $0.trustedProxies = try! HTTPDNSTrustedProxies(["127.0.0.1"])
            $0.upstream = .init(resolvers: [HTTPDNSUDPResolver(server: HTTPDNSIPAddress("127.0.0.1")!, port: dns.port)])
            $0.upstream.sendsClientSubnet = false
        }
        let answer = try await fetch(base(service) + "/d?dn=up.example.test", headers: ["X-Forwarded-For": "203.0.113.77"])
        XCTAssertEqual(text(answer), "192.0.2.55")
        XCTAssertEqual(dns.queries.withLock { $0 }.map { $0.edns.map { Self.clientSubnet(in: $0.options) } ?? "no EDNS" }, ["none"])
    }

    /// Issue 9: a dead upstream held every miss for the whole upstream timeout, uncached.
    func testAFailedUpstreamLookupIsNotRepeatedWithinTheFailureTTL() async throws {
        let silent = try upstream(answering: false)
        func start(failureTTL: Duration) throws -> HTTPDNSService {
            try startService {
                $0.upstream = .init(resolvers: [
                    HTTPDNSUDPResolver(server: HTTPDNSIPAddress("127.0.0.1")!, port: silent.port, timeout: .milliseconds(300)),
                ])
                $0.upstream.timeouts.perAttempt = .milliseconds(300)
                $0.upstream.timeouts.httpdnsBudget = .milliseconds(400)
                $0.upstream.failureTTL = failureTTL
            }
        }
        XCTAssertEqual(HTTPDNSService.Upstream().failureTTL, .seconds(5), "the documented default")
        let service = try start(failureTTL: .seconds(60))
        let first = try await fetch(base(service) + "/d?dn=dead.example.test")
        XCTAssertEqual(first.statusCode, 502)
        let asked = silent.queries.withLock { $0.count }
        XCTAssertGreaterThan(asked, 0)
        for _ in 0..<3 {
            let again = try await fetch(base(service) + "/d?dn=dead.example.test")
            XCTAssertEqual(again.statusCode, 502)
        }
        XCTAssertEqual(silent.queries.withLock { $0.count }, asked, "answered from the negative cache")
        // Another name is still asked.
        _ = try await fetch(base(service) + "/d?dn=other.example.test")
        XCTAssertGreaterThan(silent.queries.withLock { $0.count }, asked)

        // With the cache off, every miss asks again.
        let uncached = try start(failureTTL: .zero)
        let before = silent.queries.withLock { $0.count }
        _ = try await fetch(base(uncached) + "/d?dn=dead.example.test")
        let middle = silent.queries.withLock { $0.count }
        _ = try await fetch(base(uncached) + "/d?dn=dead.example.test")
        XCTAssertGreaterThan(middle, before)
        XCTAssertGreaterThan(silent.queries.withLock { $0.count }, middle)
    }

    /// The Client Subnet option in EDNS `options`, as `address/prefix`, or `none`.
    static func clientSubnet(in options: [UInt8]) -> String {
        var index = 0
        while index + 4 <= options.count {
            let code = Int(options[index]) << 8 | Int(options[index + 1])
            let length = Int(options[index + 2]) << 8 | Int(options[index + 3])
            let data = Array(options[(index + 4)..<min(options.count, index + 4 + length)])
            if code == 8, data.count >= 4 {
                let family = Int(data[0]) << 8 | Int(data[1])
                var bytes = Array(data[4...])
                bytes += [UInt8](repeating: 0, count: (family == 1 ? 4 : 16) - bytes.count)
                return "\(HTTPDNSIPAddress(bytes: bytes)!)/\(data[2])"
            }
            index += 4 + length
        }
        return "none"
    }
}

/// A UDP DNS server on 127.0.0.1 that records every query and answers A 192.0.2.55 (TTL 60),
/// AAAA with nothing, or nothing at all; with `answerOptions`, its answers carry an OPT record
/// holding them.
final class RecordingDNSServer: Sendable {
    let port: UInt16
    let queries = HTTPDNSLock<[DNSMessage]>([])
    private let socket: Int32
    private let stopped = HTTPDNSLock(false)
    private let done = DispatchSemaphore(value: 0)

    init(answering: Bool, answerOptions: [UInt8]? = nil) throws {
        let descriptor = Glibc.socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, length) == 0 && getsockname(descriptor, $0, &length) == 0
            }
        }
        guard descriptor >= 0, bound else { throw Dnsmasq.Failure(description: "recording DNS server cannot bind: errno \(errno)") }
        socket = descriptor
        port = UInt16(bigEndian: address.sin_port)
        let thread = Thread { [self] in
            serve(answering: answering, answerOptions: answerOptions)
            done.signal()
        }
        thread.start()
    }

    func stop() {
        stopped.withLock { $0 = true }
        done.wait()
        close(socket)
    }

    private func serve(answering: Bool, answerOptions: [UInt8]?) {
        var buffer = [UInt8](repeating: 0, count: 4_096)
        while !stopped.withLock({ $0 }) {
            var descriptor = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
            guard poll(&descriptor, 1, 20) > 0 else { continue }
            var from = sockaddr_storage()
            var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
            let count = buffer.withUnsafeMutableBytes { raw in
                withUnsafeMutablePointer(to: &from) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { recvfrom(socket, raw.baseAddress, raw.count, 0, $0, &length) }
                }
            }
            guard count > 0, let query = try? DNSMessage(decoding: Array(buffer[0..<count])) else { continue }
            queries.withLock { $0.append(query) }
            guard answering else { continue }
            var reply = DNSMessage.response(to: query)
            if query.questions.first?.type == .A {
                reply.answers = [DNSRecord(name: query.questions[0].name, ttl: 60, data: .a([192, 0, 2, 55]))]
            }
            if let answerOptions { reply.additionals.append(.opt(DNSEDNS(options: answerOptions))) }
            guard let bytes = try? reply.encode() else { continue }
            _ = bytes.withUnsafeBytes { raw in
                withUnsafePointer(to: &from) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { sendto(socket, raw.baseAddress, raw.count, 0, $0, length) }
                }
            }
        }
    }
}
