import HTTPDNSCore
@testable import HTTPDNSServer
import XCTest

/// The Redis side of report sharing as values, without sockets: the URL, the key layout and
/// commands, the replies read back, the bounded outbox, the backoff, and the aggregator and
/// decisions taking in what the fleet wrote.
final class HTTPDNSReportSharingTests: XCTestCase {
    let address = HTTPDNSIPAddress("192.0.2.1")!
    typealias Redis = HTTPDNSService.Reports.Redis

    func sharing(maxPending: Int = 1_000) -> HTTPDNSReportSharing {
        HTTPDNSReportSharing(namespace: "fleet", window: 300, hold: 600, maxNetworks: 32, maxPending: maxPending)
    }

    func report(_ client: String, time: Double = 1_796_300_000) -> HTTPDNSReportSharing.Report {
        HTTPDNSReportSharing.Report(
            key: .init(address: address, view: "carrier-a"), network: HTTPDNSReportNetwork(client: HTTPDNSIPAddress(client)!),
            host: "www.example.test", port: 443, time: time)
    }

    func testURLs() throws {
        let full = try Redis(url: "redis://ops:p%40ss:w@redis.internal:6380/2")
        XCTAssertEqual(full.endpoint, .tcp(host: "redis.internal", port: 6380))
        XCTAssertEqual(full.user, "ops")
        XCTAssertEqual(full.password, "p@ss:w")
        XCTAssertEqual(full.database, 2)
        XCTAssertEqual(full.namespace, "httpdns")
        let passwordOnly = try Redis(url: "redis://:secret@127.0.0.1:6379")
        XCTAssertNil(passwordOnly.user)
        XCTAssertEqual(passwordOnly.password, "secret")
        XCTAssertEqual(try Redis(url: "redis://[::1]:7000/").endpoint, .tcp(host: "::1", port: 7000))
        XCTAssertEqual(try Redis(url: "redis://localhost").endpoint, .tcp(host: "localhost", port: 6379))
        XCTAssertEqual(try Redis(url: "unix:/run/redis/redis.sock").endpoint, .unix(path: "/run/redis/redis.sock"))
        let socket = try Redis(url: "unix://:s%2Fcret@/run/redis/redis.sock")
        XCTAssertEqual(socket.endpoint, .unix(path: "/run/redis/redis.sock"))
        XCTAssertEqual(socket.password, "s/cret")
        for bad in ["http://x:1", "redis://:pw@", "redis://h:0", "redis://h:99999", "redis://h:1/x", "unix:relative.sock", "redis://h:port", "redis://@h", "unix://@/x"] {
            XCTAssertThrowsError(try Redis(url: bad), bad) { error in
                XCTAssertEqual((error as? HTTPDNSServiceError)?.code, .invalidConfiguration)
                XCTAssertFalse("\(error)".contains("pw"), "\(error)")
            }
        }
        var settings = HTTPDNSService.Reports()
        settings.redis = Redis()
        settings.redis?.namespace = "two words"
        XCTAssertThrowsError(try settings.validate())
    }

    func testAReportIsAddedTrimmedExpiredAndReadBackUnderTheNamespace() {
        let sharing = sharing()
        let commands = sharing.commands(for: report("198.51.100.7"))
        XCTAssertEqual(commands, [
            ["ZADD", "fleet:reports:carrier-a:192.0.2.1", "1796300000.000", "c6336404"],
            ["ZREMRANGEBYSCORE", "fleet:reports:carrier-a:192.0.2.1", "-inf", "(1796299700.000"],
            ["PEXPIRE", "fleet:reports:carrier-a:192.0.2.1", "300000"],
            ["ZREVRANGEBYSCORE", "fleet:reports:carrier-a:192.0.2.1", "+inf", "1796299700.000", "WITHSCORES", "LIMIT", "0", "32"],
        ])
        let reply = HTTPDNSRedisReply.array([.string("c6336404"), .string("1796300000"), .string("c6336504"), .string("1796299800.5")])
        XCTAssertEqual(HTTPDNSReportSharing.sightings(reply), [
            .init(network: 0xc633_6404, time: 1_796_300_000), .init(network: 0xc633_6504, time: 1_796_299_800.5),
        ])
        XCTAssertNil(HTTPDNSReportSharing.sightings(.array([.string("c6336404")])))
        XCTAssertNil(HTTPDNSReportSharing.sightings(.error("WRONGTYPE")))
        XCTAssertNil(HTTPDNSReportSharing.sightings(.array([.string("zz"), .string("1")])))
    }

    func testDecisionsArePublishedWithTheirHoldAsTTLAndReadBack() throws {
        let sharing = sharing()
        let demoted = HTTPDNSReportDecisions.Decision(
            kind: .demoted, address: address, view: "carrier-a", networks: 3, host: "www.example.test", port: 443,
            since: 1_796_300_000, until: 1_796_300_600)
        let down = HTTPDNSReportDecisions.Decision(
            kind: .down, address: HTTPDNSIPAddress("2001:db8::1")!, view: nil, networks: 4, host: "www.example.test", port: 8443,
            since: 1_796_300_000, until: 1_796_300_600)
        let member = "demoted 192.0.2.1 carrier-a 3 443 1796300000.000 1796300600.000 www.example.test"
        XCTAssertEqual(sharing.commands(for: demoted, now: 1_796_300_100), [
            ["SET", "fleet:decision:demoted:carrier-a:192.0.2.1", member, "PX", "500000"],
            ["ZADD", "fleet:decisions", "1796300600.000", member],
            ["ZREMRANGEBYSCORE", "fleet:decisions", "-inf", "1796300100.000"],
            ["PEXPIRE", "fleet:decisions", "600000"],
            ["INCR", "fleet:decisions:version"],
            ["PEXPIRE", "fleet:decisions:version", "600000"],
        ])
        XCTAssertEqual(sharing.commands(for: demoted, now: 1_796_300_600), [], "an ended hold is not published")
        XCTAssertEqual(sharing.decisionKey(down), "fleet:decision:down:2001:db8::1")
        XCTAssertEqual(sharing.pollCommand, ["GET", "fleet:decisions:version"])
        XCTAssertEqual(sharing.readCommand(now: 1_796_300_100), ["ZRANGEBYSCORE", "fleet:decisions", "(1796300100.000", "+inf"])
        let poll = HTTPDNSRedisReply.array([
            .string(member), .string(HTTPDNSReportSharing.encode(down)), .string("garbage"), .string("down 192.0.2.1 view 1 1 1 2 h"), .integer(1),
        ])
        XCTAssertEqual(HTTPDNSReportSharing.decisions(poll), [demoted, down])
        XCTAssertFalse(HTTPDNSReportSharing.isShareable(view: "two words"))
        XCTAssertTrue(HTTPDNSReportSharing.isShareable(view: "carrier-a"))
    }

    func testTheDecisionsAreReadWhenTheirVersionMovedOrRedisWasAway() {
        var sharing = sharing()
        XCTAssertTrue(sharing.versionChanged(.null), "the first poll reads")
        XCTAssertFalse(sharing.versionChanged(.null))
        XCTAssertTrue(sharing.versionChanged(.string("1")))
        XCTAssertFalse(sharing.versionChanged(.string("1")))
        sharing.failed(now: 0)
        XCTAssertTrue(sharing.versionChanged(.string("1")), "after a failure (a restarted Redis may count again from 1) it reads")
        XCTAssertTrue(sharing.versionChanged(.null), "a Redis that lost everything is read too")
    }

    func testTheOutboxIsBoundedAndPutsBackInOrder() {
        var sharing = sharing(maxPending: 3)
        for index in 1...5 { sharing.enqueue(report("198.51.10\(index).1")) }
        XCTAssertEqual(sharing.dropped, 2)
        let taken = sharing.take(limit: 2)
        XCTAssertEqual(taken.reports.map(\.network.description), ["198.51.103.0/24", "198.51.104.0/24"])
        sharing.enqueue(report("198.51.106.1"))
        sharing.putBack(reports: taken.reports, decisions: taken.decisions)
        XCTAssertEqual(sharing.take(limit: 10).reports.map(\.network.description), ["198.51.104.0/24", "198.51.105.0/24", "198.51.106.0/24"])
        XCTAssertEqual(sharing.dropped, 3, "putting back past the bound drops the oldest, counted")
        XCTAssertFalse(sharing.hasPending)
    }

    func testBackoffDoublesUpToTwoSecondsAndAReturnAsksToRepublish() {
        var sharing = sharing()
        XCTAssertTrue(sharing.mayConnect(now: 0))
        XCTAssertTrue(sharing.succeeded(), "the first exchange that works re-publishes")
        XCTAssertFalse(sharing.succeeded())
        var waits: [Double] = []
        for _ in 0..<8 {
            sharing.failed(now: 100)
            waits.append(((sharing.retryAt - 100) * 1000).rounded())
        }
        XCTAssertEqual(waits, [100, 200, 400, 800, 1600, 2000, 2000, 2000])
        XCTAssertFalse(sharing.mayConnect(now: 101))
        XCTAssertTrue(sharing.mayConnect(now: 102))
        XCTAssertFalse(sharing.up)
        XCTAssertTrue(sharing.succeeded())
        XCTAssertEqual(sharing.failures, 0)
    }

    func testTheFleetsSightingsCountAsOwnAndAdoptedDecisionsHold() {
        var aggregator = HTTPDNSReportAggregator(window: 300)
        let key = HTTPDNSReportAggregator.Key(address: address, view: "carrier-a")
        aggregator.record(key, network: HTTPDNSReportNetwork(client: HTTPDNSIPAddress("198.51.100.1")!), host: "www.example.test", port: 443, now: 1000)
        let count = aggregator.merge(key, sightings: [
            .init(network: HTTPDNSReportNetwork(client: HTTPDNSIPAddress("198.51.100.1")!).packed, time: 990),
            .init(network: HTTPDNSReportNetwork(client: HTTPDNSIPAddress("198.51.101.1")!).packed, time: 995),
            .init(network: HTTPDNSReportNetwork(client: HTTPDNSIPAddress("198.51.102.1")!).packed, time: 600),
        ], host: "www.example.test", port: 443, now: 1000)
        XCTAssertEqual(count, 2, "the same network counts once; one outside the window not at all")
        XCTAssertEqual(aggregator.trackedNetworks, aggregator.recountedNetworks)

        var decisions = HTTPDNSReportDecisions(hold: 600)
        let decision = HTTPDNSReportDecisions.Decision(
            kind: .demoted, address: address, view: "carrier-a", networks: 3, host: "www.example.test", port: 443, since: 1000, until: 1600)
        XCTAssertTrue(decisions.adopt(decision, now: 1000))
        XCTAssertFalse(decisions.adopt(decision, now: 1001), "the same decision again changes nothing")
        XCTAssertFalse(decisions.adopt(HTTPDNSReportDecisions.Decision(
            kind: .down, address: address, view: nil, networks: 3, host: "h", port: 1, since: 0, until: 999), now: 1000), "an ended one is ignored")
        XCTAssertEqual(decisions.order([address, HTTPDNSIPAddress("192.0.2.2")!], view: "carrier-a", now: 1500), [HTTPDNSIPAddress("192.0.2.2")!, address])
        XCTAssertEqual(decisions.order([address, HTTPDNSIPAddress("192.0.2.2")!], view: "carrier-a", now: 1600), [address, HTTPDNSIPAddress("192.0.2.2")!])
    }

    func testADescriptionNeverShowsThePassword() throws {
        let redis = try HTTPDNSService.Reports.Redis(url: "redis://fleet:s3cr%40t@127.0.0.1:6380/2")
        XCTAssertEqual(redis.description, "redis://fleet:***@127.0.0.1:6380/2 (namespace httpdns)")
        XCTAssertFalse("\(redis)".contains("s3cr"))
        var configuration = HTTPDNSService.Configuration()
        configuration.reports.redis = redis
        XCTAssertFalse("\(configuration.reports)".contains("s3cr"), "a printed configuration")
    }
}
