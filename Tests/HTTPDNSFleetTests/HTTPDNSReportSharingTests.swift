import HTTPDNSCore
@testable import HTTPDNSFleet
import XCTest

/// The Redis side of report sharing as values, without sockets: the key layout and commands, the
/// replies read back, the bounded outbox and the backoff. (The URL, the description and the
/// service's aggregator and decisions taking in what the fleet wrote are the service's:
/// HTTPDNSServerTests/HTTPDNSReportRedisTests.)
final class HTTPDNSReportSharingTests: XCTestCase {
    let address = HTTPDNSIPAddress("192.0.2.1")!

    func sharing(maxPending: Int = 1_000) -> HTTPDNSReportSharing {
        HTTPDNSReportSharing(namespace: "fleet", window: 300, hold: 600, maxNetworks: 32, maxPending: maxPending)
    }

    func report(_ client: String, time: Double = 1_796_300_000) -> HTTPDNSReportSharing.Report {
        HTTPDNSReportSharing.Report(
            key: .init(address: address, view: "carrier-a"), network: HTTPDNSReportNetwork(client: HTTPDNSIPAddress(client)!),
            host: "www.example.test", port: 443, time: time)
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
        let demoted = HTTPDNSReportDecision(
            kind: .demoted, address: address, view: "carrier-a", networks: 3, host: "www.example.test", port: 443,
            since: 1_796_300_000, until: 1_796_300_600)
        let down = HTTPDNSReportDecision(
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
}
