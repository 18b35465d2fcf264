import Foundation
import HTTPDNSCore
import HTTPDNSServer
import HTTPDNSTransport
import XCTest

/// `POST /report` over loopback HTTP: hostile requests change nothing; valid batches from several
/// client networks (named by a trusted `X-Forwarded-For` from 127.0.0.1) make the server probe the
/// address through the probe seam and decide down-for-all or demoted-in-one-view.
final class HTTPDNSServiceReportTests: HTTPDNSServiceTestCase {
    static let token = "report-token_1"
    static let account = "100000"
    static let secret = "IAmASecret"
    let clock = HTTPDNSManualClock(start: 1_796_300_000)
    let origin = HTTPDNSIPAddress("192.0.2.1")!
    let other = HTTPDNSIPAddress("192.0.2.2")!

    /// A probe stand-in: answers `reachable` and records what it was asked.
    final class StandInProbe: HTTPDNSReportProbe {
        let reachable: Bool
        let calls = HTTPDNSLock<[String]>([])

        init(reachable: Bool) { self.reachable = reachable }

        func probe(address: HTTPDNSIPAddress, port: Int, host: String) async -> Bool {
            calls.withLock { $0.append("\(address):\(port) \(host)") }
            return reachable
        }
    }

    /// Clients in 198.51.100.0/22 are view `carrier-a`, everyone else `carrier-b`.
    static func view(of client: HTTPDNSIPAddress) -> String {
        let bytes = client.bytes
        return bytes.count == 4 && bytes[0] == 198 && bytes[1] == 51 && (100...103).contains(bytes[2]) ? "carrier-a" : "carrier-b"
    }

    private func reportingService(probe: StandInProbe?, configure: (inout HTTPDNSService.Configuration) -> Void = { _ in }) throws -> HTTPDNSService {
        try startService { configuration in
            configuration.clock = clock
            configuration.trustedProxies = try! HTTPDNSTrustedProxies(["127.0.0.1/32"])
            configuration.alibaba.secrets = [Self.account: Self.secret]
            configuration.reports.tokens = [Self.token]
            configuration.reports.probe = probe
            configuration.reports.view = { Self.view(of: $0) }
            configure(&configuration)
        }
    }

    static func body(host: String = "www.example.test", address: String = "192.0.2.1", count: Int = 1) -> Data {
        let item = #"{"host":"\#(host)","address":"\#(address)","port":443,"error":"connect-timeout","time":1796300000}"#
        return Data((#"{"reports":["# + Array(repeating: item, count: count).joined(separator: ",") + "]}").utf8)
    }

    private func post(
        _ service: HTTPDNSService, _ body: Data, authorization: String? = "Bearer \(HTTPDNSServiceReportTests.token)", from client: String = "198.51.100.7"
    ) async throws -> (status: Int, text: String) {
        var headers = ["Content-Type": "application/json", "X-Forwarded-For": client]
        if let authorization { headers["Authorization"] = authorization }
        let response = try await fetch(base(service) + "/report", method: "POST", headers: headers, body: body)
        return (response.statusCode, text(response))
    }

    private func signed(_ body: Data, account: String = HTTPDNSServiceReportTests.account, secret: String = HTTPDNSServiceReportTests.secret, expires: Int64 = 1_796_300_600) -> String {
        HTTPDNSReportCredential.signedHeader(account: account, expires: expires, body: Array(body), secret: secret)
    }

    /// Waits until the service holds `count` decisions (probes run on their own tasks).
    private func decisions(_ service: HTTPDNSService, count: Int) async throws -> [HTTPDNSReportDecisions.Decision] {
        let deadline = ContinuousClock.now + .seconds(10)
        while ContinuousClock.now < deadline {
            let decisions = service.reportState.decisions()
            if decisions.count >= count, service.reportState.probesInFlight == 0 { return decisions }
            try await Task.sleep(for: .milliseconds(10))
        }
        XCTFail("no \(count) decisions within 10 s: \(service.reportState.decisions())")
        return []
    }

    func testForgedExpiredUnknownOversizedAndMalformedReportsChangeNothing() async throws {
        let probe = StandInProbe(reachable: false)
        let service = try reportingService(probe: probe)
        let body = Self.body()
        let cases: [(String, Data, String?, Int)] = [
            ("no credential", body, nil, 401),
            ("unreadable credential", body, "Basic dXNlcjpwYXNz", 401),
            ("wrong token", body, "Bearer report-token_2", 403),
            ("forged signature", body, signed(body, secret: "guessed"), 403),
            ("signature of another body", body, signed(Self.body(address: "192.0.2.2")), 403),
            ("expired", body, signed(body, expires: 1_796_299_999), 403),
            ("too far ahead", body, signed(body, expires: 1_796_303_601), 403),
            ("unknown account", body, signed(body, account: "100001"), 403),
            ("over 64 KiB", Data(repeating: 0x20, count: 65_537), "Bearer \(Self.token)", 413),
            ("51 items", Self.body(count: 51), "Bearer \(Self.token)", 400),
            ("malformed JSON", Data(#"{"reports":[{"host":"#.utf8), "Bearer \(Self.token)", 400),
            ("not a host", Self.body(host: "www..example.test"), "Bearer \(Self.token)", 400),
            ("not an address", Self.body(address: "192.0.2.999"), "Bearer \(Self.token)", 400),
        ]
        // Each from a different network, three times over: past the threshold, had any counted.
        for round in 0..<3 {
            for (index, (name, payload, authorization, status)) in cases.enumerated() {
                let reply = try await post(service, payload, authorization: authorization, from: "198.51.\(100 + round).\(index + 1)")
                XCTAssertEqual(reply.status, status, "\(name): \(reply.text)")
            }
        }
        let forged = try await post(service, body, authorization: signed(body, secret: "guessed"))
        XCTAssertEqual(forged.text, "wrong signature\n")
        let malformed = try await post(service, Self.body(count: 51))
        XCTAssertEqual(malformed.text, "51 reports, at most 50\n")
        let get = try await fetch(base(service) + "/report", headers: ["Authorization": "Bearer \(Self.token)"])
        XCTAssertEqual(get.statusCode, 405)

        XCTAssertEqual(service.reportState.aggregator.trackedKeys, 0)
        XCTAssertEqual(service.reportState.decisions(), [])
        XCTAssertEqual(probe.calls.withLock { $0 }, [])
        XCTAssertEqual(service.reportOrder([origin, other], view: "carrier-a"), [origin, other])
        let counters = service.metrics.reports
        XCTAssertEqual(counters[.accepted], 0)
        XCTAssertEqual(counters[.unauthorized], 6)
        XCTAssertEqual(counters[.forbidden], 19)
        XCTAssertEqual(counters[.malformed], 13)
        let metrics = service.metrics.render()
        XCTAssertTrue(metrics.contains("httpdns_reports_total{result=\"forbidden\"} 19\n"), metrics)
        XCTAssertTrue(metrics.contains("httpdns_report_decisions_total{decision=\"down\"} 0\n"), metrics)
    }

    func testReportsFromOneViewWhileTheProbePassesDemoteTheAddressInThatViewOnly() async throws {
        let probe = StandInProbe(reachable: true)
        let service = try reportingService(probe: probe)
        // One network reporting many times counts once: no probe yet.
        for host in 1...5 {
            let reply = try await post(service, Self.body(), from: "198.51.100.\(host)")
            XCTAssertEqual(reply.status, 202)
            XCTAssertEqual(reply.text, #"{"accepted":1}"#)
        }
        // A client of the other view once.
        let elsewhere = try await post(service, Self.body(), from: "203.0.113.9")
        XCTAssertEqual(elsewhere.status, 202)
        XCTAssertEqual(service.reportState.aggregator.networks(.init(address: origin, view: "carrier-a"), now: clock.now()), 1)
        XCTAssertEqual(probe.calls.withLock { $0 }, [])
        // Two more networks of carrier-a, one of them signing with its account.
        let signedBody = Self.body()
        _ = try await post(service, signedBody, authorization: signed(signedBody), from: "198.51.101.1")
        let third = try await post(service, Self.body(), from: "198.51.102.1")
        XCTAssertEqual(third.status, 202)

        let made = try await decisions(service, count: 1)
        XCTAssertEqual(made.map(\.kind), [.demoted])
        XCTAssertEqual(made.first?.address, origin)
        XCTAssertEqual(made.first?.view, "carrier-a")
        XCTAssertEqual(made.first?.networks, 3)
        XCTAssertEqual(probe.calls.withLock { $0 }, ["192.0.2.1:443 www.example.test"])
        // carrier-a's answers stop leading with it (and still hold it); carrier-b's are unchanged.
        XCTAssertEqual(service.reportOrder([origin, other], view: "carrier-a"), [other, origin])
        XCTAssertEqual(service.reportOrder([origin, other], view: "carrier-b"), [origin, other])
        // More reports while demoted start no new probe.
        _ = try await post(service, Self.body(), from: "198.51.103.1")
        XCTAssertEqual(probe.calls.withLock { $0 }.count, 1)

        let status = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(service.reportState.statusSection().json.utf8)) as? [String: Any])
        let listed = try XCTUnwrap(status["decisions"] as? [[String: Any]])
        XCTAssertEqual(listed.first?["decision"] as? String, "demoted")
        XCTAssertEqual(listed.first?["view"] as? String, "carrier-a")
        XCTAssertEqual(listed.first?["until"] as? Int, 1_796_300_600)
        XCTAssertEqual((status["counts"] as? [String: Any])?["demoted"] as? Int, 1)
        let byView = try XCTUnwrap(status["byView"] as? [[String: Any]])
        XCTAssertEqual(byView.first { $0["view"] as? String == "carrier-a" }?["demoted"] as? Int, 1)
        let metrics = service.metrics.render()
        XCTAssertTrue(metrics.contains("httpdns_report_decisions_total{decision=\"demoted\"} 1\n"), metrics)
        XCTAssertTrue(metrics.contains("httpdns_report_probes_total{result=\"reachable\"} 1\n"), metrics)
        XCTAssertTrue(metrics.contains("httpdns_queries_total{endpoint=\"report\"} 9\n"), metrics)

        // The hold ends after 10 minutes.
        clock.advance(by: 600)
        XCTAssertEqual(service.reportOrder([origin, other], view: "carrier-a"), [origin, other])
    }

    func testAFailedProbeTakesTheAddressDownForEveryView() async throws {
        let probe = StandInProbe(reachable: false)
        let service = try reportingService(probe: probe)
        for (index, client) in ["203.0.113.1", "2001:db8:1::1", "2001:db8:1:100::1"].enumerated() {
            let body = Self.body()
            let reply = try await post(service, body, authorization: index == 0 ? "Bearer \(Self.token)" : signed(body), from: client)
            XCTAssertEqual(reply.status, 202, reply.text)
        }
        let made = try await decisions(service, count: 1)
        XCTAssertEqual(made.map(\.kind), [.down])
        XCTAssertNil(made.first?.view)
        XCTAssertEqual(service.reportOrder([origin, other], view: "carrier-a"), [other])
        XCTAssertEqual(service.reportOrder([origin, other], view: "carrier-b"), [other])
        XCTAssertEqual(service.reportOrder([origin], view: "carrier-b"), [origin])
        XCTAssertTrue(service.metrics.render().contains("httpdns_report_decisions_total{decision=\"down\"} 1\n"))
    }

    func testAddressesTheZoneDoesNotGiveAreNeitherCountedNorProbed() async throws {
        let probe = StandInProbe(reachable: false)
        let service = try reportingService(probe: probe)
        for network in 0..<5 {
            // 192.0.2.3 is V4Only's address, not www's; 10.1.2.3 is nobody's; alias follows its CNAME.
            let stranger = try await post(service, Self.body(address: "10.1.2.3"), from: "203.0.\(network).1")
            XCTAssertEqual(stranger.text, #"{"accepted":0}"#)
            let wrongName = try await post(service, Self.body(address: "192.0.2.3"), from: "203.0.\(network).1")
            XCTAssertEqual(wrongName.text, #"{"accepted":0}"#)
            let alias = try await post(service, Self.body(host: "alias.example.test", address: "192.0.2.2"), from: "203.0.\(network).1")
            XCTAssertEqual(alias.text, #"{"accepted":1}"#)
        }
        _ = try await decisions(service, count: 1)
        XCTAssertEqual(probe.calls.withLock { $0 }, ["192.0.2.2:443 alias.example.test"])
        XCTAssertTrue(service.metrics.render().contains("httpdns_report_items_total{result=\"ignored\"} 10\n"))
    }

    func testPastTheBoundOfBatchesInFlightTheServiceAnswers503WithRetryAfter() async throws {
        let service = try reportingService(probe: StandInProbe(reachable: true)) { $0.reports.maxBatchesInFlight = 2 }
        XCTAssertTrue(service.reportState.admit())
        XCTAssertTrue(service.reportState.admit())
        let response = try await fetch(
            base(service) + "/report", method: "POST", headers: ["Authorization": "Bearer \(Self.token)"], body: Self.body())
        XCTAssertEqual(response.statusCode, 503)
        XCTAssertEqual(response.headers.first { $0.name.lowercased() == "retry-after" }?.value, "1")
        XCTAssertEqual(service.metrics.reports[.shed], 1)
        XCTAssertEqual(service.reportState.aggregator.trackedKeys, 0)
        service.reportState.release()
        let again = try await post(service, Self.body())
        XCTAssertEqual(again.status, 202)
        // Queries are answered meanwhile, whatever the report bound.
        let query = try await fetch(base(service) + "/d?dn=www.example.test")
        XCTAssertEqual(text(query), "192.0.2.1;192.0.2.2")
    }

    func testAProbeThatNeverAnswersCountsAsUnreachableAtItsTimeout() async throws {
        let service = try startService { configuration in
            configuration.clock = clock
            configuration.reports.tokens = [Self.token]
            configuration.reports.threshold = 1
            configuration.reports.probeTimeout = .milliseconds(200)
            configuration.reports.probe = HTTPDNSReportClosureProbe { _, _, _ in
                try? await Task.sleep(for: .seconds(60))
                return true
            }
        }
        let reply = try await post(service, Self.body())
        XCTAssertEqual(reply.status, 202)
        let made = try await decisions(service, count: 1)
        XCTAssertEqual(made.map(\.kind), [.down])
        XCTAssertTrue(service.metrics.render().contains("httpdns_report_probes_total{result=\"unreachable\"} 1\n"))
    }

    func testABodyOfExactly64KiBIsReadWhileDoHStillStopsAt65535Bytes() async throws {
        let service = try reportingService(probe: StandInProbe(reachable: true))
        var body = Self.body()
        body.append(Data(repeating: 0x20, count: 65_536 - body.count))
        let reply = try await post(service, body)
        XCTAssertEqual(reply.status, 202, reply.text)
        let doh = try await fetch(
            base(service) + "/dns-query", method: "POST", headers: ["Content-Type": "application/dns-message"],
            body: Data(repeating: 0, count: 65_536))
        XCTAssertEqual(doh.statusCode, 413)
    }

    /// Without a stand-in, the server probes with its origin prober (a TCP connect here, the zone
    /// having no check): an address that answers is demoted in the reporting view, one where nothing
    /// listens is taken out for all. Loopback only: the service's own port is the origin that answers.
    func testTheServersOwnProbeIsItsOriginProber() async throws {
        let (up, dead) = (HTTPDNSIPAddress("127.0.0.1")!, HTTPDNSIPAddress("127.0.0.2")!)
        let service = try reportingService(probe: nil) { configuration in
            configuration.zone = try! HTTPDNSZone(entries: ["www.example.test": .init(ipv4: [up, dead])])
        }
        let port = try XCTUnwrap(service.port)
        func report(_ address: HTTPDNSIPAddress) -> Data {
            let item = #"{"host":"www.example.test","address":"\#(address)","port":\#(port),"error":"connect-timeout","time":1796300000}"#
            return Data(#"{"reports":[\#(item)]}"#.utf8)
        }
        for network in 0..<3 {
            let reply = try await post(service, report(up), from: "203.0.\(network).1")
            XCTAssertEqual(reply.text, #"{"accepted":1}"#)
        }
        let demoted = try await decisions(service, count: 1)
        XCTAssertEqual(demoted.map(\.kind), [.demoted])
        XCTAssertEqual(demoted.first?.view, "carrier-b")
        XCTAssertEqual(service.reportOrder([up, dead], view: "carrier-b"), [dead, up])
        XCTAssertEqual(service.reportOrder([up, dead], view: "carrier-a"), [up, dead])
        for network in 0..<3 {
            _ = try await post(service, report(dead), from: "203.0.\(network).1")
        }
        let made = try await decisions(service, count: 2)
        XCTAssertEqual(Set(made.map(\.kind)), [.down, .demoted])
        XCTAssertEqual(service.reportOrder([up, dead], view: "carrier-a"), [up])
        XCTAssertTrue(service.metrics.render().contains("httpdns_report_probes_total{result=\"unreachable\"} 1\n"))
    }

    func testABadReportConfigurationIsRefusedAtStart() {
        let mutations: [(inout HTTPDNSService.Reports) -> Void] = [
            { $0.tokens = ["has space"] },
            { $0.tokens = [""] },
            { $0.threshold = 0 },
            { $0.threshold = 33 },
            { $0.window = .zero },
            { $0.maxBatchesInFlight = 0 },
        ]
        for configure in mutations {
            var configuration = HTTPDNSService.Configuration()
            configure(&configuration.reports)
            XCTAssertThrowsError(try HTTPDNSService(configuration: configuration).start()) { error in
                XCTAssertEqual((error as? HTTPDNSServiceError)?.code, .invalidConfiguration)
            }
        }
    }

    /// One request with the project's transport, from any task.
    static func send(_ url: String, method: String = "GET", headers: [String: String] = [:], body: Data? = nil) async throws -> HTTPTransportResponse {
        var request = HTTPTransportRequest(url: URL(string: url)!, method: method)
        request.headers = headers.sorted { $0.key < $1.key }.map { HTTPTransportHeader(name: $0.key, value: $0.value) }
        if let body { request.body = .data(body) }
        request.timeouts = .init(connect: .seconds(5), total: .seconds(20), idle: .seconds(20))
        return try await HTTPTransport.shared.send(request)
    }

    /// 100,000 reports from 10,000 networks (/24s), against 2,000 zone addresses, with
    /// tracked pairs bounded at 1,000 (× 32 networks): the tables never grow past their bounds,
    /// the evictions are counted, and queries sent meanwhile are all answered.
    func testAHundredThousandReportsFromTenThousandNetworksKeepMemoryBounded() async throws {
        var zone = "{"
        for name in 0..<200 {
            let addresses = (0..<10).map { "\"10.\(name / 100).\(name % 100).\($0 + 1)\"" }.joined(separator: ",")
            zone += (name == 0 ? "" : ",") + "\"n\(name).example.test\":{\"A\":[\(addresses)]}"
        }
        zone += "}"
        let parsedZone = try HTTPDNSZone(json: Data(zone.utf8))
        let service = try reportingService(probe: StandInProbe(reachable: true)) { configuration in
            configuration.zone = parsedZone
            configuration.reports.maxTrackedAddresses = 1_000
            configuration.reports.maxNetworksPerAddress = 32
            configuration.reports.threshold = 32
        }
        let requests = 10_000
        let base = base(service)
        let peak = HTTPDNSLock((keys: 0, networks: 0, failures: 0, queries: 0))
        try await withThrowingTaskGroup(of: Void.self) { group in
            for worker in 0..<8 {
                group.addTask {
                    var index = worker
                    while index < requests {
                        // Network `index` (10,000 /24s); 10 items for 10 of the 2,000 addresses.
                        let client = "100.\(64 + index / 256).\(index % 256).1"
                        let items = (0..<10).map { item in
                            let name = (index * 7 + item * 13) % 200
                            return #"{"host":"n\#(name).example.test","address":"10.\#(name / 100).\#(name % 100).\#(item + 1)","port":443,"error":"reset","time":1796300000}"#
                        }
                        let body = Data((#"{"reports":["# + items.joined(separator: ",") + "]}").utf8)
                        let response = try await Self.send(
                            base + "/report", method: "POST",
                            headers: ["Authorization": "Bearer \(Self.token)", "X-Forwarded-For": client], body: body)
                        if response.statusCode != 202 { peak.withLock { $0.failures += 1 } }
                        if index % 50 == 0 {
                            let query = try await Self.send(base + "/d?dn=n\(index % 200).example.test")
                            peak.withLock { $0.queries += query.statusCode == 200 && !query.body.isEmpty ? 1 : 0 }
                            let aggregator = service.reportState.aggregator
                            peak.withLock { state in
                                state.keys = max(state.keys, aggregator.trackedKeys)
                                state.networks = max(state.networks, aggregator.trackedNetworks)
                            }
                        }
                        index += 8
                    }
                }
            }
            try await group.waitForAll()
        }
        let figures = peak.withLock { $0 }
        let aggregator = service.reportState.aggregator
        XCTAssertEqual(figures.failures, 0)
        XCTAssertEqual(figures.queries, requests / 50)
        XCTAssertLessThanOrEqual(max(figures.keys, aggregator.trackedKeys), 1_000)
        XCTAssertLessThanOrEqual(max(figures.networks, aggregator.trackedNetworks), 32_000)
        XCTAssertGreaterThan(aggregator.evictedKeys, 0)
        XCTAssertEqual(service.metrics.reports[.accepted], UInt64(requests))
        let metrics = service.metrics.render()
        XCTAssertTrue(metrics.contains("httpdns_report_items_total{result=\"recorded\"} 100000\n"), metrics)
        XCTAssertTrue(metrics.contains("httpdns_report_evictions_total{what=\"address\"} \(aggregator.evictedKeys)\n"), metrics)
    }
}
