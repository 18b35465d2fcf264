import DNSWire
import Foundation
import HTTPDNS
import HTTPDNSCore
import HTTPDNSOperations
import HTTPDNSServer
import HTTPDNSTestSupport
import HTTPDNSTransport
import XCTest

/// Origin health end to end on loopback: origins of the tests' own that stop and start again, TLS
/// origins with right and wrong certificates, HTTP origins with chosen statuses, every answer
/// format, kept wire answers, fail-open, the bound on probes in flight, `/status` and `/metrics`.
///
/// Intervals are 100-200 ms; the time limits allow `slack` beyond the documented bound
/// (interval × fall + one interval) for a loaded two-CPU machine.
final class HTTPDNSHealthServiceTests: HTTPDNSServiceTestCase {
    private let slack: Duration = .milliseconds(700)
    private static let token = "health-test-token-0123456789"

    private func check(_ type: String, port: Int, interval: Double = 0.15, rise: Int = 2, fall: Int = 2, extra: String = "") -> String {
        #"{"type": "\#(type)", "port": \#(port), "interval": \#(interval), "timeout": 0.5, "rise": \#(rise), "fall": \#(fall), "jitter": 0\#(extra)}"#
    }

    private func start(zone json: String, _ configure: (inout HTTPDNSService.Configuration) -> Void = { _ in }) throws -> HTTPDNSService {
        let zone = try HTTPDNSZone(json: Data(json.utf8))
        return try startService { configuration in
            configuration.zone = zone
            configuration.admin.token = Self.token
            configure(&configuration)
        }
    }

    // MARK: Answers in every format

    /// The IPv4 addresses `name` gets in each format, and from a wire query asked twice (the second
    /// answered from the kept wire answer).
    private func answers(_ service: HTTPDNSService, _ name: String) async throws -> [String: Set<String>] {
        var result: [String: Set<String>] = [:]
        let dnspod = text(try await fetch(base(service) + "/d?dn=" + name))
        result["dnspod"] = Set((dnspod.split(separator: ",").first ?? "").split(separator: ";").map(String.init))
        for (format, path) in [("alibaba", "/100000/d?host="), ("ips", "/ips?host=")] {
            let body = try await fetch(base(service) + path + name).body
            let object = try XCTUnwrap(try JSONSerialization.jsonObject(with: body) as? [String: Any])
            result[format] = Set((object["ips"] as? [String] ?? []).filter { !$0.contains(":") })
        }
        for (format, id) in [("wire", UInt16(0x1234)), ("kept-wire", UInt16(0x4321))] {
            let query = DNSMessage.query(name: try DNSName(name), type: .A, id: id)
            let response = try await fetch(base(service) + "/dns-query?dns=" + DoHWireFormat.base64URL(query))
            let message = try DNSMessage(decoding: [UInt8](response.body))
            XCTAssertEqual(message.id, id)
            result[format] = Set(message.addresses(for: try DNSName(name)).addresses.compactMap { HTTPDNSIPAddress(bytes: $0)?.description })
        }
        return result
    }

    /// Polls until every format answers `expected`, failing after `limit`; returns the time taken.
    @discardableResult
    private func waitForAnswers(
        _ service: HTTPDNSService, _ name: String, _ expected: Set<String>, within limit: Duration,
        file: StaticString = #filePath, line: UInt = #line
    ) async throws -> Duration {
        let started = ContinuousClock.now
        var last: [String: Set<String>] = [:]
        while ContinuousClock.now - started < limit + .seconds(5) {
            last = try await answers(service, name)
            if last.values.allSatisfy({ $0 == expected }) {
                let taken = ContinuousClock.now - started
                XCTAssertLessThanOrEqual(taken, limit, "took \(taken)", file: file, line: line)
                return taken
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        XCTFail("never answered \(expected.sorted()): \(last)", file: file, line: line)
        return .zero
    }

    func testAStoppedOriginLeavesEveryAnswerWithinFallIntervalsAndReturnsAfterRise() async throws {
        let steady = try HealthTestListener(addresses: ["127.0.0.2"])
        let flaky = try HealthTestListener(addresses: ["127.0.0.3"], port: steady.port)
        defer { steady.stop(); flaky.stop() }
        let service = try start(zone: """
            {"www.example.test": {"A": ["127.0.0.2", "127.0.0.3"], "ttl": 60, "check": \(check("tcp", port: steady.port))},
             "other.example.test": {"A": ["127.0.0.3"], "check": \(check("tcp", port: steady.port))}}
            """)
        let both: Set<String> = ["127.0.0.2", "127.0.0.3"]
        try await waitForAnswers(service, "www.example.test", both, within: .seconds(1))
        XCTAssertGreaterThan(service.keptWireAnswers, 0)
        // Two names share 127.0.0.3 with one check: one probe, however many names.
        try await Task.sleep(for: .milliseconds(400))
        XCTAssertEqual(service.health.table.statuses.count, 2)

        flaky.stop()
        // interval × fall (+ one interval), and the probe's own time.
        try await waitForAnswers(service, "www.example.test", ["127.0.0.2"], within: .milliseconds(150 * 2 + 150) + slack)
        // A name whose every address is down is answered all of them (fail open), and counted.
        let before = service.metrics.healthFailOpenCount
        let alone = try await answers(service, "other.example.test")
        XCTAssertEqual(alone["dnspod"], ["127.0.0.3"])
        XCTAssertEqual(alone["kept-wire"], ["127.0.0.3"])
        XCTAssertGreaterThanOrEqual(service.metrics.healthFailOpenCount - before, 5)

        try flaky.start()
        try await waitForAnswers(service, "www.example.test", both, within: .milliseconds(150 * 2 + 150) + slack)
        let metrics = text(try await fetch(base(service) + "/metrics"))
        XCTAssertTrue(metrics.contains("httpdns_origin_up{address=\"127.0.0.3\",check=\"tcp:\(steady.port)\"} 1\n"), metrics)
        XCTAssertTrue(metrics.contains("httpdns_origin_up{address=\"127.0.0.2\",check=\"tcp:\(steady.port)\"} 1\n"), metrics)
    }

    func testAReloadKeepsTheStateOfAddressesThatRemainAndDropsTheRest() async throws {
        let origin = try HealthTestListener(addresses: ["127.0.0.2"])
        let dead = try HealthTestListener(addresses: ["127.0.0.3"], port: origin.port)
        dead.stop()
        defer { origin.stop() }
        let tcp = check("tcp", port: origin.port, fall: 1)
        let service = try start(zone: #"{"www.example.test": {"A": ["127.0.0.2", "127.0.0.3"], "check": \#(tcp)}}"#)
        try await waitForAnswers(service, "www.example.test", ["127.0.0.2"], within: .seconds(1) + slack)
        // The same address and check in a new zone is down at once, under a new name too.
        try service.reload(zone: try HTTPDNSZone(json: Data("""
            {"www.example.test": {"A": ["127.0.0.2", "127.0.0.3"], "check": \(tcp)},
             "new.example.test": {"A": ["127.0.0.2", "127.0.0.3"], "check": \(tcp)}}
            """.utf8)))
        let reloaded = try await answers(service, "new.example.test")
        XCTAssertEqual(reloaded["dnspod"], ["127.0.0.2"])
        XCTAssertEqual(reloaded["wire"], ["127.0.0.2"])
        // Without a check the address is answered again, and its state is gone from the metrics.
        try service.reload(zone: try HTTPDNSZone(json: Data(#"{"www.example.test": {"A": ["127.0.0.2", "127.0.0.3"]}}"#.utf8)))
        let unchecked = try await answers(service, "www.example.test")
        XCTAssertEqual(unchecked["ips"], ["127.0.0.2", "127.0.0.3"])
        XCTAssertFalse(service.metrics.render().contains("httpdns_origin_up{"))
    }

    // MARK: Check kinds

    func testTLSChecksVerifyTheCertificateForTheName() async throws {
        let authority = try TestCertificates()
        let stranger = try TestCertificates(commonName: "another CA")
        defer { authority.remove(); stranger.remove() }
        let right = try TestHTTPServer(address: "127.0.0.2", tls: try authority.issue(dnsNames: ["good.example.test", "secure.example.test"]))
        let wrongName = try TestHTTPServer(address: "127.0.0.3", tls: try authority.issue(dnsNames: ["other.example.test"]))
        let wrongCA = try TestHTTPServer(address: "127.0.0.4", tls: try stranger.issue(dnsNames: ["bad-ca.example.test"]))
        defer { right.stop(); wrongName.stop(); wrongCA.stop() }
        let service = try start(zone: """
            {"good.example.test": {"A": ["127.0.0.2"], "check": \(check("tls", port: right.port, fall: 1))},
             "wrong-name.example.test": {"A": ["127.0.0.3"], "check": \(check("tls", port: wrongName.port, fall: 1))},
             "bad-ca.example.test": {"A": ["127.0.0.4"], "check": \(check("tls", port: wrongCA.port, fall: 1))},
             "secure.example.test": {"A": ["127.0.0.2"], "check": \(check("https", port: right.port, fall: 1, extra: #", "path": "/health""#))}}
            """) { $0.health.trust = .caFile(authority.caCertificatePath) }
        let states = try await settledStates(service, probes: 2)
        XCTAssertEqual(states["127.0.0.2 tls:\(right.port)"]?.isUp, true)
        XCTAssertEqual(states["127.0.0.2 https:\(right.port)/health"]?.isUp, true)
        XCTAssertEqual(states["127.0.0.3 tls:\(wrongName.port)"]?.isUp, false)
        XCTAssertEqual(states["127.0.0.4 tls:\(wrongCA.port)"]?.isUp, false)
        XCTAssertTrue(states["127.0.0.3 tls:\(wrongName.port)"]?.last?.error?.hasPrefix("serverCertificateUntrusted") == true,
                      String(describing: states["127.0.0.3 tls:\(wrongName.port)"]?.last))
        // The HTTPS probe sent the name as Host, and the TLS probes sent no request at all.
        XCTAssertTrue(right.requests.allSatisfy { $0.path == "/health" && $0.header("Host") == "secure.example.test:\(right.port)" })
        XCTAssertFalse(right.requests.isEmpty)
        XCTAssertTrue(wrongName.requests.isEmpty)
    }

    func testHTTPChecksExpectAStatusClass() async throws {
        let healthy = try HealthTestListener(addresses: ["127.0.0.2"], mode: .http(status: 204, delay: .zero))
        let failing = try HealthTestListener(addresses: ["127.0.0.3"], port: healthy.port, mode: .http(status: 503, delay: .zero))
        let moved = try HealthTestListener(addresses: ["127.0.0.4"], port: healthy.port, mode: .http(status: 301, delay: .zero))
        defer { healthy.stop(); failing.stop(); moved.stop() }
        let http = check("http", port: healthy.port, fall: 1)
        let redirects = check("http", port: healthy.port, fall: 1, extra: #", "expect": "3xx""#)
        let service = try start(zone: """
            {"www.example.test": {"A": ["127.0.0.2", "127.0.0.3", "127.0.0.4"], "check": \(http)},
             "moved.example.test": {"A": ["127.0.0.4"], "check": \(redirects)}}
            """)
        let states = try await settledStates(service, probes: 2)
        XCTAssertEqual(states["127.0.0.2 http:\(healthy.port)/"]?.isUp, true)
        XCTAssertEqual(states["127.0.0.3 http:\(healthy.port)/"]?.isUp, false)
        XCTAssertEqual(states["127.0.0.3 http:\(healthy.port)/"]?.last?.status, 503)
        XCTAssertEqual(states["127.0.0.4 http:\(healthy.port)/"]?.isUp, false)
        XCTAssertEqual(states["127.0.0.4 http:\(healthy.port)/"]?.last?.status, 301)
        XCTAssertEqual(states["127.0.0.4 http:\(healthy.port)/"]?.last?.error, "status 301, expected 2xx")
        // 127.0.0.4 is down for the 2xx check and up for the 3xx one: each name follows its own.
        XCTAssertEqual(states["127.0.0.4 http:\(healthy.port)/ 3xx"]?.isUp, true)
        let answered = try await answers(service, "www.example.test")
        XCTAssertEqual(answered["dnspod"], ["127.0.0.2"])
        let movedAnswers = try await answers(service, "moved.example.test")
        XCTAssertEqual(movedAnswers["wire"], ["127.0.0.4"])
    }

    /// States by "address label" once every target has at least `probes` probes.
    private func settledStates(_ service: HTTPDNSService, probes: Int) async throws -> [String: HTTPDNSHealthStatus] {
        let started = ContinuousClock.now
        while ContinuousClock.now - started < .seconds(10) {
            let statuses = service.health.table.statuses
            if !statuses.isEmpty, statuses.values.allSatisfy({ $0.probes >= probes }) {
                return Dictionary(uniqueKeysWithValues: statuses.map { ("\($0.key.address) \($0.key.check.label)", $0.value) })
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        XCTFail("probes did not run: \(service.health.table.statuses)")
        return [:]
    }

    // MARK: The bound

    func testAThousandCheckedAddressesNeverExceedTheBoundOnProbesInFlight() async throws {
        let addresses = (0..<1_000).map { "127.1.\($0 / 250).\($0 % 250 + 1)" }
        let origin = try HealthTestListener(addresses: addresses, mode: .http(status: 200, delay: .milliseconds(40)))
        defer { origin.stop() }
        let http = #"{"type": "http", "port": \#(origin.port), "interval": 60, "timeout": 10, "jitter": 0}"#
        let names = stride(from: 0, to: addresses.count, by: 25).map { first in
            let list = addresses[first..<first + 25].map { "\"\($0)\"" }.joined(separator: ",")
            return #""n\#(first).example.test": {"A": [\#(list)], "check": \#(http)}"#
        }
        let bound = 16
        let service = try start(zone: "{" + names.joined(separator: ",") + "}") { $0.health.maxProbesInFlight = bound }
        // On-demand probes share the bound.
        async let onDemand = withTaskGroup(of: Bool.self) { group in
            for index in 0..<40 {
                group.addTask {
                    await service.health.probe(address: HTTPDNSIPAddress(addresses[index])!, port: origin.port, host: "n0.example.test").passed
                }
            }
            return await group.reduce(0) { $0 + ($1 ? 1 : 0) }
        }
        let started = ContinuousClock.now
        while origin.acceptedCount < 1_040, ContinuousClock.now - started < .seconds(60) {
            try await Task.sleep(for: .milliseconds(50))
        }
        let passed = await onDemand
        XCTAssertEqual(passed, 40)
        while service.health.table.statuses.values.contains(where: { $0.probes == 0 }), ContinuousClock.now - started < .seconds(60) {
            try await Task.sleep(for: .milliseconds(50))
        }
        XCTAssertEqual(origin.acceptedCount, 1_040)
        XCTAssertLessThanOrEqual(origin.peak, bound)
        XCTAssertGreaterThanOrEqual(origin.peak, bound / 2, "the probes never ran side by side")
        XCTAssertLessThanOrEqual(service.health.peakInFlight, bound)
        XCTAssertEqual(service.health.table.statuses.values.filter { $0.probes == 1 && $0.isUp }.count, 1_000)
    }

    func testOnDemandProbesRefuseHostileInput() async throws {
        let service = try start(zone: "{}")
        let address = HTTPDNSIPAddress("127.0.0.2")!
        for (port, host) in [(0, "a.test"), (65_536, "a.test"), (80, "bad host"), (80, "127.0.0.1"), (80, String(repeating: "a", count: 300))] {
            let result = await service.health.probe(address: address, port: port, host: host)
            XCTAssertFalse(result.passed)
            XCTAssertEqual(result.error, "invalid address, port or host")
        }
    }

    // MARK: Status and metrics

    func testStatusNeedsTheAdminToken() async throws {
        let origin = try HealthTestListener(addresses: ["127.0.0.2"])
        defer { origin.stop() }
        let service = try start(zone: #"{"b.example.test": {"A": ["127.0.0.2"], "check": \#(check("tcp", port: origin.port))}, "a.example.test": {"A": ["127.0.0.2"], "check": \#(check("tcp", port: origin.port))}}"#)
        _ = try await settledStates(service, probes: 1)
        let url = base(service) + "/status"
        let missing = try await fetch(url)
        XCTAssertEqual(missing.statusCode, 401)
        XCTAssertEqual(
            missing.headers.filter { $0.name.lowercased() == "www-authenticate" }.map(\.value),
            ["Basic realm=\"httpdns\", charset=\"UTF-8\"", "Bearer realm=\"httpdns\""])
        func basic(_ credentials: String) -> String { "Basic " + Data(credentials.utf8).base64EncodedString() }
        for (value, status) in [
            ("Basic " + Self.token, 401), ("Bearer", 401), ("Bearer " + Self.token + "x", 403), ("Bearer wrong", 403),
            (basic("admin:wrong"), 403), (basic(Self.token), 401), (basic("admin:"), 401), (basic("admin:" + Self.token), 200),
            (basic(":" + Self.token), 200),
        ] {
            let response = try await fetch(url, headers: ["Authorization": value])
            XCTAssertEqual(response.statusCode, status, value)
        }
        let right = try await fetch(url, headers: ["Authorization": "bearer " + Self.token])
        XCTAssertEqual(right.statusCode, 200)
        let object = try XCTUnwrap(try JSONSerialization.jsonObject(with: right.body) as? [String: Any])
        let health = try XCTUnwrap(object["health"] as? [String: Any])
        let origins = try XCTUnwrap(health["origins"] as? [[String: Any]])
        XCTAssertEqual(origins.count, 1)
        XCTAssertEqual(origins[0]["address"] as? String, "127.0.0.2")
        XCTAssertEqual(origins[0]["check"] as? String, "tcp:\(origin.port)")
        XCTAssertEqual(origins[0]["state"] as? String, "up")
        XCTAssertEqual(origins[0]["names"] as? [String], ["a.example.test", "b.example.test"])
        let since = try XCTUnwrap(origins[0]["since"] as? Double)
        XCTAssertEqual(since, Date().timeIntervalSince1970, accuracy: 60)
        let last = try XCTUnwrap(origins[0]["last"] as? [String: Any])
        XCTAssertEqual(last["passed"] as? Bool, true)
        XCTAssertEqual(health["maxProbesInFlight"] as? Int, 64)
        let post = try await fetch(url, method: "POST")
        XCTAssertEqual(post.statusCode, 405)

        // A browser gets the console page; reading /status and /metrics counts as no query.
        let browser = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"
        let page = try await fetch(url, headers: ["Authorization": "Bearer " + Self.token, "Accept": browser])
        XCTAssertEqual(page.statusCode, 200)
        XCTAssertEqual(page.headers.first { $0.name.lowercased() == "content-type" }?.value, "text/html; charset=utf-8")
        XCTAssertEqual(
            page.headers.first { $0.name.lowercased() == "content-security-policy" }?.value,
            "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'")
        let html = String(decoding: page.body, as: UTF8.self)
        XCTAssertTrue(html.contains("<td data-key=\"check\">tcp:\(origin.port)</td>"), html)
        XCTAssertTrue(html.contains("<meta http-equiv=\"refresh\" content=\"5\">"), html)
        _ = try await fetch(base(service) + "/metrics")
        XCTAssertEqual(service.metrics.queriesStatus()["total"], .number("0"))

        let closed = try startService()
        let absent = try await fetch(base(closed) + "/status", headers: ["Authorization": "Bearer " + Self.token])
        XCTAssertEqual(absent.statusCode, 404)
    }

    func testBadHealthAndAdminSettingsAreRefusedAtStart() {
        for configure in [
            { (configuration: inout HTTPDNSService.Configuration) in configuration.admin.token = "short" },
            { $0.admin.token = String(repeating: "x", count: 20) + " y" },
            { $0.health.maxProbesInFlight = 0 },
            { $0.health.trust = .caFile("/nonexistent/ca.pem") },
        ] {
            var configuration = HTTPDNSService.Configuration()
            configure(&configuration)
            let service = HTTPDNSService(configuration: configuration)
            XCTAssertThrowsError(try service.start()) { error in
                XCTAssertEqual((error as? HTTPDNSServiceError)?.code, .invalidConfiguration)
            }
            service.stop()
        }
    }

    func testMetricsCountProbesAndFailOpen() async throws {
        let origin = try HealthTestListener(addresses: ["127.0.0.2"])
        origin.stop()
        let service = try start(zone: #"{"www.example.test": {"A": ["127.0.0.2"], "check": \#(check("tcp", port: origin.port, fall: 1))}}"#)
        _ = try await settledStates(service, probes: 1)
        _ = try await answers(service, "www.example.test")
        let parsed = try PrometheusText(text(try await fetch(base(service) + "/metrics")))
        XCTAssertEqual(parsed.types["httpdns_origin_up"], "gauge")
        XCTAssertEqual(parsed.value("httpdns_origin_up", ["address": "127.0.0.2", "check": "tcp:\(origin.port)"]), 0)
        XCTAssertGreaterThanOrEqual(parsed.value("httpdns_health_probes_total", ["kind": "scheduled", "result": "failed"]) ?? 0, 1)
        XCTAssertEqual(parsed.value("httpdns_health_probes_total", ["kind": "on-demand", "result": "passed"]), 0)
        // DNSPod, Alibaba, IP list and two wire queries (a fail-open answer is never kept).
        XCTAssertEqual(parsed.value("httpdns_health_fail_open_total"), 5)
    }
}
