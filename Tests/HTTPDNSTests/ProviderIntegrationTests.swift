import DNSWire
import Foundation
import HTTPDNS
import HTTPDNSCore
import HTTPDNSTestSupport
import HTTPServing
import XCTest

/// Every provider format against HTTP servers on 127.0.0.1, plus the ways a service fails.
final class ProviderIntegrationTests: XCTestCase {
    private func provider(_ spec: String) throws -> any HTTPDNSResolver {
        try HTTPDNSProviderSpec(parsing: spec).makeResolver(timeout: .seconds(3))
    }

    func testDNSPodPlainAnswer() async throws {
        let server = try ProviderServer { request in
            XCTAssertEqual(request.path, "/d")
            XCTAssertEqual(request.queryValue("dn"), "www.example.com")
            XCTAssertEqual(request.queryValue("ttl"), "1")
            return .text("93.184.216.34;93.184.216.35,120")
        }
        defer { server.stop() }
        let records = try await provider("dnspod=\(server.base)").resolve("www.example.com", family: .ipv4)
        XCTAssertEqual(records.ipv4.map(\.description), ["93.184.216.34", "93.184.216.35"])
        XCTAssertEqual(records.ttl, 120)
    }

    func testDNSPodAAAAAndAddrs() async throws {
        let server = try ProviderServer { request in
            switch request.queryValue("type") {
            case "aaaa": return .text("2001:db8::1,60")
            case "addrs": return .text("93.184.216.34,120-2001:db8::1,60|198.51.100.9")
            default: return .text("0")
            }
        }
        defer { server.stop() }
        let dnspod = try provider("dnspod=\(server.base)")
        let v6 = try await dnspod.resolve("a.example", family: .ipv6)
        XCTAssertEqual(v6.ipv6.map(\.description), ["2001:db8::1"])
        let both = try await dnspod.resolve("a.example", family: .both)
        XCTAssertEqual(both.ipv4.map(\.description), ["93.184.216.34"])
        XCTAssertEqual(both.ipv6.map(\.description), ["2001:db8::1"])
        XCTAssertEqual(both.ttl, 60, "the smaller TTL")
        do {
            _ = try await dnspod.resolve("a.example", family: .ipv4)
            XCTFail("0 is no address")
        } catch let error as HTTPDNSError {
            XCTAssertEqual(error.code, .noAddress)
        }
    }

    func testDNSPodEncryptedAES() async throws {
        let key = "0123456789abcdef"
        let server = try ProviderServer { request in
            // The service decrypts dn and encrypts the answer with the same key and a fresh IV.
            let format = DNSPodFormat(configuration: {
                var configuration = DNSPodFormat.Configuration(baseURL: "http://unused")
                configuration.key = key
                configuration.algorithm = .aes
                configuration.accountID = "42"
                return configuration
            }())
            guard request.queryValue("id") == "42", request.queryValue("alg") == "aes",
                  let dn = request.queryValue("dn"),
                  let name = try? format.decrypt(Array(dn.utf8), algorithm: .aes),
                  String(decoding: name, as: UTF8.self).hasPrefix("secret.example"),
                  let answer = try? format.encrypt(Array("93.184.216.40,300".utf8), algorithm: .aes)
            else { return .text("bad request", status: 400) }
            return .text(answer)
        }
        defer { server.stop() }
        let records = try await provider("dnspod=\(server.base)?id=42&key=\(key)&alg=aes").resolve("secret.example", family: .ipv4)
        XCTAssertEqual(records.ipv4.map(\.description), ["93.184.216.40"])
        XCTAssertEqual(records.ttl, 300)
    }

    func testAlibabaLegacyAndSigned() async throws {
        let server = try ProviderServer { request in
            if request.path == "/100000/d" {
                return ProviderServer.json(#"{"host":"www.aliyun.com","ips":["93.184.216.50"],"ipsv6":[],"ttl":57,"origin_ttl":120}"#)
            }
            if request.path == "/100000/sign_d", let host = request.queryValue("host"), let t = request.queryValue("t"),
               request.queryValue("s") == AlibabaFormat.legacySignature(hosts: host, secret: "IAmASecret", expiry: Int64(t) ?? 0) {
                return ProviderServer.json(#"{"host":"www.aliyun.com","ips":["93.184.216.51"],"ttl":60}"#)
            }
            return ProviderServer.json(#"{"code":"InvalidSignature"}"#).with(status: 403)
        }
        defer { server.stop() }
        let plain = try await provider("alibaba=\(server.base)/100000").resolve("www.aliyun.com", family: .ipv4)
        XCTAssertEqual(plain.ipv4.map(\.description), ["93.184.216.50"])
        XCTAssertEqual(plain.ttl, 57)
        let signed = try await provider("alibaba=\(server.base)/100000?secret=IAmASecret").resolve("www.aliyun.com", family: .ipv4)
        XCTAssertEqual(signed.ipv4.map(\.description), ["93.184.216.51"])
        do {
            _ = try await provider("alibaba=\(server.base)/100000?secret=wrong").resolve("www.aliyun.com", family: .ipv4)
            XCTFail("a bad signature was accepted")
        } catch let error as HTTPDNSError {
            XCTAssertEqual(error.code, .unauthorized)
        }
    }

    func testDoHWireGETAndPOSTFollowingCNAME() async throws {
        let server = try ProviderServer { request in
            XCTAssertEqual(request.path, "/dns-query")
            return ProviderServer.dohAnswer(
                request, a: [[93, 184, 216, 60]], aaaa: [[0x20, 0x01, 0x0d, 0xb8] + Array(repeating: 0, count: 11) + [7]],
                cname: "edge.example.net", ttl: 90)
        }
        defer { server.stop() }
        for kind in ["doh", "doh-post"] {
            let doh = try provider("\(kind)=\(server.base)/dns-query")
            let records = try await doh.resolve("www.example.com", family: .both)
            XCTAssertEqual(records.ipv4.map(\.description), ["93.184.216.60"], kind)
            XCTAssertEqual(records.ipv6.map(\.description), ["2001:db8::7"], kind)
            XCTAssertEqual(records.ttl, 90, kind)
        }
        XCTAssertTrue(server.requests.contains { $0.method == "POST" && $0.header("content-type") == "application/dns-message" })
        XCTAssertTrue(server.requests.contains { $0.method == "GET" && $0.queryValue("dns") != nil })
    }

    func testHTTPFreshnessLimitsTheTTL() async throws {
        let server = try ProviderServer { request in
            var response = ProviderServer.dohAnswer(request, a: [[93, 184, 216, 61]], aaaa: [], ttl: 90)
            response.headers.append(.init(name: "Cache-Control", value: "public, max-age=40"))
            response.headers.append(.init(name: "Age", value: "10"))
            return response
        }
        defer { server.stop() }
        let records = try await provider("doh=\(server.base)/dns-query").resolve("fresh.example", family: .ipv4)
        XCTAssertEqual(records.ttl, 30, "max-age 40 minus age 10 caps the record TTL of 90")
    }

    func testPreResolutionAsksInBatches() async throws {
        let server = try ProviderServer { request in
            let names = (request.queryValue("dn") ?? "").split(separator: ",")
            let lines = names.enumerated().map { index, name in "\(name).:93.184.216.\(100 + index),300" }
            return .text(lines.joined(separator: "\n"))
        }
        defer { server.stop() }
        let hosts = (1...7).map { "pre\($0).example" }
        var configuration = HTTPDNSConfiguration(resolvers: [try provider("dnspod=\(server.base)")])
        configuration.failover.httpdnsOnly = true
        configuration.cache.preResolve = hosts + ["PRE1.example.", "198.51.100.1"]
        let subject = HTTPDNSEngine(configuration: configuration)
        try await waitUntil { hosts.allSatisfy { subject.cachedAnswer($0) != nil } }
        XCTAssertEqual(server.requestCount, 1, "seven names, one DNSPod batch request")
        XCTAssertEqual(server.requests.first?.queryValue("dn"), hosts.joined(separator: ","))
        XCTAssertEqual(subject.cachedAnswer("pre3.example")?.addresses.map(\.description), ["93.184.216.102"])
    }

    func testDoHJSON() async throws {
        let server = try ProviderServer { request in
            XCTAssertEqual(request.header("accept"), "application/dns-json")
            let name = request.queryValue("name") ?? ""
            return ProviderServer.json("""
            {"Status":0,"TC":false,"RD":true,"RA":true,"Question":[{"name":"\(name).","type":1}],
             "Answer":[{"name":"\(name).","type":5,"TTL":300,"data":"cdn.example.net."},
                       {"name":"cdn.example.net.","type":1,"TTL":45,"data":"93.184.216.70"}]}
            """)
        }
        defer { server.stop() }
        let records = try await provider("doh-json=\(server.base)/resolve").resolve("json.example", family: .ipv4)
        XCTAssertEqual(records.ipv4.map(\.description), ["93.184.216.70"])
        XCTAssertEqual(records.ttl, 45)
    }

    func testIPList() async throws {
        let server = try ProviderServer { request in
            XCTAssertEqual(request.queryValue("host"), "blocked.example")
            return ProviderServer.json(#"{"ips":["93.184.216.80","2001:db8::80"],"ttl":600}"#)
        }
        defer { server.stop() }
        let records = try await provider("ips=\(server.base)/ips").resolve("blocked.example", family: .both)
        XCTAssertEqual(records.ipv4.map(\.description), ["93.184.216.80"])
        XCTAssertEqual(records.ipv6.map(\.description), ["2001:db8::80"])
        XCTAssertEqual(records.ttl, 600)
    }

    func testBootstrapAddressReachesServiceWithoutDNS() async throws {
        let server = try ProviderServer { request in
            XCTAssertEqual(request.header("host")?.hasPrefix("httpdns.invalid"), true)
            return .text("93.184.216.90,60")
        }
        defer { server.stop() }
        // `.invalid` can never resolve: the answer proves the bootstrap address was used.
        let spec = "dnspod=http://httpdns.invalid:\(server.server.port)?bootstrap=127.0.0.1"
        let records = try await provider(spec).resolve("x.example", family: .ipv4)
        XCTAssertEqual(records.ipv4.map(\.description), ["93.184.216.90"])
    }

    // MARK: - Failure modes

    private func expectFailure(
        _ mode: ProviderServer.Mode, kind: String = "dnspod", path: String = "", code: HTTPDNSError.Code,
        file: StaticString = #filePath, line: UInt = #line
    ) async throws {
        let server = try ProviderServer { _ in .text("93.184.216.34,60") }
        defer { server.stop() }
        server.set(mode)
        var configuration = HTTPDNSConfiguration(resolvers: [try provider("\(kind)=\(server.base)\(path)")])
        configuration.failover.httpdnsOnly = true
        configuration.timeouts.perAttempt = .seconds(0.5)
        let subject = HTTPDNSEngine(configuration: configuration)
        do {
            let answer = try await subject.resolve("fail.example")
            XCTFail("resolved to \(answer)", file: file, line: line)
        } catch let error as HTTPDNSError {
            XCTAssertEqual(error.code, .allAttemptsFailed, file: file, line: line)
            XCTAssertEqual(error.attempts.first?.error.code, code, "\(error)", file: file, line: line)
        }
    }

    func testHTTP500() async throws {
        try await expectFailure(.status(500), code: .httpStatus)
    }

    func testTimeout() async throws {
        try await expectFailure(.delay(2), code: .timedOut)
    }

    func testGarbageBody() async throws {
        try await expectFailure(.garbage, code: .malformedAnswer)
        try await expectFailure(.garbage, kind: "doh", path: "/dns-query", code: .malformedAnswer)
        try await expectFailure(.garbage, kind: "doh-json", path: "/resolve", code: .malformedAnswer)
    }

    func testWrongContentTypeForDoH() async throws {
        // A captive portal answering 200 with HTML instead of a DNS message.
        try await expectFailure(.contentType("text/html"), kind: "doh", path: "/dns-query", code: .malformedAnswer)
    }

    func testOversizedBody() async throws {
        try await expectFailure(.oversized, kind: "alibaba", path: "/100000", code: .malformedAnswer)
    }

    func testConnectionRefused() async throws {
        let server = try ProviderServer { _ in .text("0") }
        let base = server.base
        server.stop()
        var configuration = HTTPDNSConfiguration(resolvers: [try provider("dnspod=\(base)")])
        configuration.failover.httpdnsOnly = true
        let subject = HTTPDNSEngine(configuration: configuration)
        do {
            _ = try await subject.resolve("refused.example")
            XCTFail("resolved")
        } catch let error as HTTPDNSError {
            XCTAssertEqual(error.attempts.first?.error.code, .transport)
            XCTAssertTrue(error.description.contains("cannotConnectToHost"), error.description)
        }
    }

    /// The first caller's lookup goes to an HTTP service; cancelling that caller must not cancel the
    /// request the second caller shares. The service holds its answer at a gate until both callers
    /// wait on the one lookup and the first has left.
    func testCancelledFirstCallerLeavesWhileTheServiceRequestGoesOn() async throws {
        let (subject, slow, gate) = try gatedEngine(answering: "93.184.216.98,300")
        defer {
            gate.open()
            slow.stop()
        }
        let first = Task { try await subject.resolve("shared.example") }
        let requested = await pollUntil { gate.waitingCount == 1 }
        XCTAssertTrue(requested, "the first caller's request never reached the service")
        let second = Task { try await subject.resolve("shared.example") }
        let joined = await pollUntil { subject.flightWaiterCount == 2 }
        XCTAssertTrue(joined, "the second caller never joined the first one's lookup")
        first.cancel()
        await assertEndsCancelled(first)
        XCTAssertEqual(subject.flightWaiterCount, 1, "the second caller still waits")
        XCTAssertEqual(gate.waitingCount, 1, "the service request is still held, not cancelled")
        XCTAssertNil(subject.cachedAnswer("shared.example"), "the caller left before the service answered")
        gate.open()
        let answer = try await second.value
        XCTAssertEqual(answer.addresses.map(\.description), ["93.184.216.98"])
        XCTAssertFalse(answer.fromCache, "the second caller's answer came from the shared lookup")
        XCTAssertEqual(slow.requestCount, 1, "one request, not cancelled and not repeated")
    }

    /// A caller already cancelled when it registers a new lookup (an HTTP service first: the lookup
    /// starts once the caller is parked, ``HTTPDNSFlight/wait(then:)``) leaves with `cancelled`,
    /// but the lookup it registered still goes out, and a caller joining it is answered.
    func testACallerCancelledBeforeItsLookupStartsStillStartsItForTheOthers() async throws {
        let (subject, slow, gate) = try gatedEngine(answering: "93.184.216.99,300")
        defer {
            gate.open()
            slow.stop()
        }
        let first = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await subject.resolve("parked.example")
        }
        await assertEndsCancelled(first)
        let requested = await pollUntil { gate.waitingCount == 1 }
        XCTAssertTrue(requested, "the cancelled caller's lookup never reached the service")
        let second = Task { try await subject.resolve("parked.example") }
        let joined = await pollUntil { subject.flightWaiterCount == 1 }
        XCTAssertTrue(joined, "the second caller never joined the registered lookup")
        gate.open()
        let answer = try await second.value
        XCTAssertEqual(answer.addresses.map(\.description), ["93.184.216.99"])
        XCTAssertEqual(slow.requestCount, 1, "one request for both callers")
    }

    /// `caller` ends with `cancelled`, not an answer.
    private func assertEndsCancelled(_ caller: Task<HTTPDNSAnswer, any Error>, line: UInt = #line) async {
        do {
            _ = try await caller.value
            XCTFail("the cancelled caller got an answer", line: line)
        } catch let error as HTTPDNSError {
            XCTAssertEqual(error.code, .cancelled, line: line)
        } catch {
            XCTFail("not an HTTPDNSError: \(error)", line: line)
        }
    }

    /// An engine asking one DNSPod-format service that holds every answer (`answering`) at `gate`
    /// until it opens; generous timeouts, no LocalDNS.
    private func gatedEngine(answering text: String) throws -> (HTTPDNSEngine, ProviderServer, TestGate) {
        let gate = TestGate()
        let slow = try ProviderServer { _ in
            gate.wait()
            return .text(text)
        }
        var configuration = HTTPDNSConfiguration(resolvers: [try provider("dnspod=\(slow.base)")])
        configuration.failover.httpdnsOnly = true
        configuration.timeouts.perAttempt = .seconds(30)
        configuration.timeouts.httpdnsBudget = .seconds(30)
        return (HTTPDNSEngine(configuration: configuration), slow, gate)
    }

    /// 40 concurrent lookups share one request: the service holds its answer until all 40 wait on
    /// the one lookup, so none can be answered from the cache instead (which would pass unshared).
    func testFailoverToSecondServiceAndCoalescingCountedByServer() async throws {
        let dead = try ProviderServer { _ in .text("0") }
        dead.set(.status(503))
        defer { dead.stop() }
        let gate = TestGate()
        let good = try ProviderServer { _ in
            gate.wait()
            return .text("93.184.216.99,300")
        }
        defer {
            gate.open()
            good.stop()
        }
        var configuration = HTTPDNSConfiguration(resolvers: [try provider("dnspod=\(dead.base)"), try provider("dnspod=\(good.base)")])
        configuration.failover.httpdnsOnly = true
        configuration.timeouts.perAttempt = .seconds(30)
        configuration.timeouts.httpdnsBudget = .seconds(30)
        let subject = HTTPDNSEngine(configuration: configuration)
        let answers = try await withThrowingTaskGroup(of: HTTPDNSAnswer.self) { group in
            for _ in 0..<40 { group.addTask { try await subject.resolve("busy.example") } }
            let joined = await pollUntil { subject.flightWaiterCount == 40 }
            XCTAssertTrue(joined, "\(subject.flightWaiterCount) of 40 callers joined the lookup")
            gate.open()
            return try await group.reduce(into: [HTTPDNSAnswer]()) { $0.append($1) }
        }
        XCTAssertEqual(answers.count, 40)
        XCTAssertTrue(answers.allSatisfy { $0.addresses.map(\.description) == ["93.184.216.99"] })
        XCTAssertTrue(answers.allSatisfy { !$0.fromCache }, "every caller was answered by the shared lookup")
        XCTAssertEqual(dead.requestCount, 1)
        XCTAssertEqual(good.requestCount, 1, "40 concurrent lookups, one upstream request")
    }

    /// The launch takes the configured order without the lock while no service cools down: a
    /// failure must still send the next lookups to the other service first, and the cooled one's
    /// success, once its time is up, must put it first again.
    func testAFailedServiceIsAskedLastUntilItsCoolDownEndsAndFirstAgainAfter() async throws {
        let flaky = try ProviderServer { _ in .text("93.184.216.98,300") }
        flaky.set(.status(503))
        defer { flaky.stop() }
        let good = try ProviderServer { _ in .text("93.184.216.99,300") }
        defer { good.stop() }
        let clock = HTTPDNSManualClock()
        var configuration = HTTPDNSConfiguration(resolvers: [try provider("dnspod=\(flaky.base)"), try provider("dnspod=\(good.base)")])
        configuration.failover.httpdnsOnly = true
        configuration.clock = clock
        let subject = HTTPDNSEngine(configuration: configuration)

        let first = try await subject.resolve("a.example")
        XCTAssertEqual(first.addresses.map(\.description), ["93.184.216.99"])
        XCTAssertEqual([flaky.requestCount, good.requestCount], [1, 1], "the flaky service failed, the good one answered")
        let second = try await subject.resolve("b.example")
        XCTAssertEqual(second.addresses.map(\.description), ["93.184.216.99"])
        XCTAssertEqual([flaky.requestCount, good.requestCount], [1, 2], "cooling down: the good service was asked alone")

        flaky.set(.normal)
        clock.advance(by: 31)
        let third = try await subject.resolve("c.example")
        XCTAssertEqual(third.addresses.map(\.description), ["93.184.216.98"])
        XCTAssertEqual([flaky.requestCount, good.requestCount], [2, 2], "the cool-down over: the first service first again")
        let fourth = try await subject.resolve("d.example")
        XCTAssertEqual(fourth.addresses.map(\.description), ["93.184.216.98"])
        XCTAssertEqual([flaky.requestCount, good.requestCount], [3, 2], "its success cleared the cool-down")
    }
}

extension HTTPServer.Response {
    func with(status: Int) -> HTTPServer.Response {
        var copy = self
        copy.status = status
        return copy
    }
}
