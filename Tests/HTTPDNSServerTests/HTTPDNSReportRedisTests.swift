import HTTPDNSCore
import HTTPDNSFleet
@testable import HTTPDNSServer
import XCTest

/// The service's side of report sharing as values, without sockets: the Redis URL and its
/// description, and the aggregator and decisions taking in what the fleet wrote. (The key layout,
/// commands, replies, outbox and backoff are HTTPDNSFleetTests/HTTPDNSReportSharingTests.)
final class HTTPDNSReportRedisTests: XCTestCase {
    let address = HTTPDNSIPAddress("192.0.2.1")!
    typealias Redis = HTTPDNSService.Reports.Redis

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
