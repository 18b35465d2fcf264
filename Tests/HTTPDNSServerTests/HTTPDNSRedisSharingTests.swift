import Foundation
import HTTPDNSCore
import HTTPDNSOperations
import HTTPDNSServer
import HTTPDNSTestSupport
import HTTPDNSTransport
import XCTest

/// A fleet of in-process services sharing report state through a real `redis-server` (started by
/// the test on a loopback port, with a password): round-robin reports decide as one instance
/// would, every instance shows the decision within a second, and a Redis that refuses or goes away
/// leaves each instance answering alone, then catching up.
final class HTTPDNSRedisSharingTests: HTTPDNSServiceTestCase {
    static let token = "report-token_1"
    let clock = HTTPDNSManualClock(start: 1_796_300_000)
    let origin = HTTPDNSIPAddress("192.0.2.1")!
    let other = HTTPDNSIPAddress("192.0.2.2")!
    var redis: RedisServer?

    /// A probe stand-in shared by the fleet: answers `reachable`, counts the calls.
    final class CountingProbe: HTTPDNSReportProbe {
        let calls = HTTPDNSLock(0)
        func probe(address: HTTPDNSIPAddress, port: Int, host: String) async -> Bool {
            calls.withLock { $0 += 1 }
            return true
        }
    }

    override func tearDown() {
        super.tearDown()
        redis?.stop()
        redis = nil
    }

    private func startRedis(_ configuration: RedisServer.Configuration = .init()) throws -> RedisServer {
        let server = try RedisServer(configuration)
        redis = server
        return server
    }

    private func instance(_ url: String?, probe: CountingProbe, namespace: String = "httpdns") throws -> HTTPDNSService {
        try startService { configuration in
            configuration.clock = clock
            configuration.trustedProxies = try! HTTPDNSTrustedProxies(["127.0.0.1/32"])
            configuration.reports.tokens = [Self.token]
            configuration.reports.probe = probe
            if let url {
                var settings = try! HTTPDNSService.Reports.Redis(url: url)
                settings.namespace = namespace
                configuration.reports.redis = settings
            }
        }
    }

    private func report(_ service: HTTPDNSService, from client: String) async throws {
        let item = #"{"host":"www.example.test","address":"192.0.2.1","port":443,"error":"connect-timeout","time":1796300000}"#
        let response = try await fetch(
            base(service) + "/report", method: "POST",
            headers: ["Content-Type": "application/json", "X-Forwarded-For": client, "Authorization": "Bearer \(Self.token)"],
            body: Data(#"{"reports":[\#(item)]}"#.utf8))
        XCTAssertEqual(response.statusCode, 202, text(response))
    }

    /// A DNSPod-style query as a client would make it; never fails, whatever Redis does.
    private func answer(_ service: HTTPDNSService) async throws -> String {
        let response = try await fetch(base(service) + "/d?dn=www.example.test", headers: ["X-Forwarded-For": "203.0.113.50"])
        XCTAssertEqual(response.statusCode, 200)
        return text(response)
    }

    private func networks(_ service: HTTPDNSService) -> Int {
        service.reportState.aggregator.networks(.init(address: origin, view: "default"), now: clock.now())
    }

    private func demoted(_ service: HTTPDNSService) -> Bool {
        service.reportOrder([origin, other], view: "default") == [other, origin]
    }

    private func metric(_ service: HTTPDNSService, _ line: String) -> Bool {
        service.metrics.render().contains(line + "\n")
    }

    func testRoundRobinReportsDecideAsOneInstanceWouldAndReachEveryInstanceWithinASecond() async throws {
        let redis = try startRedis()
        // The reference: the same three reports to one instance alone.
        let aloneProbe = CountingProbe()
        let alone = try instance(nil, probe: aloneProbe)
        for network in 0..<3 { try await report(alone, from: "198.51.\(100 + network).7") }
        let aloneDecided = await pollUntil { alone.reportState.decisions().count == 1 && alone.reportState.probesInFlight == 0 }
        XCTAssertTrue(aloneDecided)

        let probe = CountingProbe()
        let fleet = try (0..<3).map { _ in try instance(redis.url(), probe: probe) }
        for (index, service) in fleet.enumerated() {
            try await report(service, from: "198.51.\(100 + index).7")
            // The barrier: this instance wrote its report to Redis and read the fleet's back (the
            // next instance's read-back must find it: counting it locally comes before the write).
            let merged = await pollUntil { networks(service) == index + 1 && service.reportState.sharer?.hasPending == false }
            XCTAssertTrue(merged, "instance \(index) counts \(networks(service)) networks, not \(index + 1)")
            if index < 2 { XCTAssertTrue(fleet.allSatisfy { $0.reportState.decisions().isEmpty }, "decided before the threshold") }
        }
        let decided = await pollUntil { fleet[2].reportState.decisions().count == 1 }
        XCTAssertTrue(decided, "the third instance decided nothing")
        let everywhere = await pollUntil(within: .seconds(1)) { fleet.allSatisfy(demoted) }
        XCTAssertTrue(everywhere, "not demoted on every instance within 1 s: \(fleet.map(demoted))")

        func shape(_ decisions: [HTTPDNSReportDecisions.Decision]) -> [String] {
            decisions.map { "\($0.kind) \($0.address) \($0.view ?? "-") \($0.networks) \($0.until)" }
        }
        XCTAssertEqual(shape(alone.reportState.decisions()), ["demoted 192.0.2.1 default 3 1796300600.0"])
        for service in fleet { XCTAssertEqual(shape(service.reportState.decisions()), shape(alone.reportState.decisions())) }
        XCTAssertEqual(probe.calls.withLock { $0 }, aloneProbe.calls.withLock { $0 }, "one probe for the fleet, as for one instance")
        for service in fleet {
            let answered = try await answer(service)
            XCTAssertTrue(answered.hasPrefix("192.0.2.2"), answered)
            XCTAssertTrue(metric(service, "httpdns_redis_up 1"))
            XCTAssertTrue(metric(service, "httpdns_redis_errors_total{code=\"auth\"} 0"))
        }
    }

    func testAWrongPasswordLeavesEachInstanceAloneCountedAndAnswering() async throws {
        let redis = try startRedis()
        let probe = CountingProbe()
        let fleet = try (0..<3).map { _ in try instance(redis.url(password: "wrong"), probe: probe) }
        for (index, service) in fleet.enumerated() {
            try await report(service, from: "198.51.\(100 + index).7")
            XCTAssertEqual(networks(service), 1)
            _ = try await answer(service)
        }
        for service in fleet {
            let counted = await pollUntil { !metric(service, "httpdns_redis_errors_total{code=\"auth\"} 0") }
            XCTAssertTrue(counted, service.metrics.render())
            XCTAssertTrue(metric(service, "httpdns_redis_up 0"))
            XCTAssertEqual(service.reportState.sharer?.lastError?.code, .auth)
            XCTAssertFalse(service.reportState.sharer?.lastError?.description.contains("wrong") ?? true)
        }
        // Spread over three lone instances, three networks decide nothing.
        XCTAssertTrue(fleet.allSatisfy { $0.reportState.decisions().isEmpty })
        XCTAssertEqual(probe.calls.withLock { $0 }, 0)
        // Each instance still decides on its own reports, as without Redis.
        for network in 1..<3 { try await report(fleet[0], from: "198.51.\(100 + network).7") }
        let decided = await pollUntil { fleet[0].reportState.decisions().count == 1 }
        XCTAssertTrue(decided)
        let answered = try await answer(fleet[0])
        XCTAssertTrue(answered.hasPrefix("192.0.2.2"), answered)
    }

    func testARedis6ACLUserAuthenticatesAndAWrongOneIsRefused() async throws {
        var configuration = RedisServer.Configuration()
        configuration.extraDirectives = ["user fleet on >fleet-pass ~fleet:* +@all"]
        let redis = try startRedis(configuration)
        let probe = CountingProbe()
        let member = try instance("redis://fleet:fleet-pass@127.0.0.1:\(redis.port)/0", probe: probe, namespace: "fleet")
        let outsider = try instance("redis://fleet:fleet-guess@127.0.0.1:\(redis.port)", probe: probe, namespace: "fleet")
        let up = await pollUntil { metric(member, "httpdns_redis_up 1") }
        XCTAssertTrue(up, member.metrics.render())
        let refused = await pollUntil { outsider.reportState.sharer?.lastError?.code == .auth }
        XCTAssertTrue(refused, "\(String(describing: outsider.reportState.sharer?.lastError))")
        XCTAssertTrue(metric(outsider, "httpdns_redis_up 0"))
        // The console's redis section says the same, without the password.
        let joined = member.reportState.redisStatus()
        XCTAssertEqual(joined["configured"], .bool(true))
        XCTAssertEqual(joined["state"], .string("connected"))
        XCTAssertEqual(joined["endpoint"], .string("redis://fleet:***@127.0.0.1:\(redis.port)/0 (namespace fleet)"))
        let refusedStatus = outsider.reportState.redisStatus()
        XCTAssertEqual(refusedStatus["state"], .string("disconnected"))
        XCTAssertFalse(refusedStatus.json.contains("fleet-guess"), refusedStatus.json)
    }

    func testRedisStoppedMidRunFallsBackAloneAndTheFleetCatchesUpWhenItReturns() async throws {
        let redis = try startRedis()
        let probe = CountingProbe()
        let fleet = try (0..<2).map { _ in try instance(redis.url(), probe: probe) }
        let upEverywhere = await pollUntil { fleet.allSatisfy { metric($0, "httpdns_redis_up 1") } }
        XCTAssertTrue(upEverywhere)
        redis.stop()
        // Queries go on; reports to the first instance decide there alone.
        for network in 0..<3 {
            try await report(fleet[0], from: "198.51.\(100 + network).7")
            for service in fleet { _ = try await answer(service) }
        }
        let decided = await pollUntil { fleet[0].reportState.decisions().count == 1 }
        XCTAssertTrue(decided)
        let downEverywhere = await pollUntil { fleet.allSatisfy { metric($0, "httpdns_redis_up 0") } }
        XCTAssertTrue(downEverywhere, fleet.map { $0.metrics.render() }.joined())
        XCTAssertTrue(fleet[0].metrics.render().contains("httpdns_redis_errors_total{code=\"connect\"}"))
        XCTAssertTrue(demoted(fleet[0]))
        XCTAssertFalse(demoted(fleet[1]), "the second instance cannot know yet")

        // Redis returns empty: the first instance re-publishes what it decided, the second adopts it.
        try redis.restart()
        let caughtUp = await pollUntil { demoted(fleet[1]) }
        XCTAssertTrue(caughtUp, "the second instance did not catch up")
        XCTAssertTrue(fleet.allSatisfy { metric($0, "httpdns_redis_up 1") })
        let answered = try await answer(fleet[1])
        XCTAssertTrue(answered.hasPrefix("192.0.2.2"), answered)
    }
}
