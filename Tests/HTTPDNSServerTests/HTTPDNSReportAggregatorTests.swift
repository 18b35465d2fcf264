import HTTPDNSCore
import HTTPDNSFleet
import HTTPDNSServer
import XCTest

/// Distinct reporting networks per (address, view) in a sliding window, with bounded memory
/// (``HTTPDNSReportAggregator``), and the networks themselves (``HTTPDNSReportNetwork``).
final class HTTPDNSReportAggregatorTests: XCTestCase {
    let origin = HTTPDNSIPAddress("192.0.2.1")!

    private func network(_ text: String) -> HTTPDNSReportNetwork {
        HTTPDNSReportNetwork(client: HTTPDNSIPAddress(text)!)
    }

    private func key(_ view: String = "default", address: HTTPDNSIPAddress? = nil) -> HTTPDNSReportAggregator.Key {
        .init(address: address ?? origin, view: view)
    }

    func testNetworksAreTheClientsSlash24AndSlash56() {
        XCTAssertEqual(network("198.51.100.7"), network("198.51.100.250"))
        XCTAssertNotEqual(network("198.51.100.7"), network("198.51.101.7"))
        XCTAssertEqual(network("198.51.100.7").description, "198.51.100.0/24")
        XCTAssertEqual(network("2001:db8:aa:bb12::1"), network("2001:db8:aa:bbff:ffff::1"))
        XCTAssertNotEqual(network("2001:db8:aa:bb12::1"), network("2001:db8:aa:bc12::1"))
        XCTAssertEqual(network("2001:db8:aa:bb12::1").description, "2001:db8:aa:bb00::/56")
        // A mapped client is its IPv4 address; an IPv6 /56 never equals an IPv4 /24.
        XCTAssertEqual(network("::ffff:198.51.100.9"), network("198.51.100.1"))
        XCTAssertNotEqual(network("::c633:6400"), network("198.51.100.0"))
        XCTAssertNotEqual(network("0.0.0.0"), network("::"))
    }

    func testDistinctNetworksCountOnceWithinTheWindow() {
        var aggregator = HTTPDNSReportAggregator(window: 300)
        XCTAssertEqual(aggregator.record(key(), network: network("198.51.100.1"), host: "a.test", port: 443, now: 1_000), 1)
        // The same network again (another host in it) does not count twice.
        XCTAssertEqual(aggregator.record(key(), network: network("198.51.100.2"), host: "a.test", port: 443, now: 1_010), 1)
        XCTAssertEqual(aggregator.record(key(), network: network("198.51.101.2"), host: "a.test", port: 443, now: 1_100), 2)
        // Another view is another count.
        XCTAssertEqual(aggregator.record(key("other"), network: network("198.51.102.2"), host: "a.test", port: 443, now: 1_100), 1)
        XCTAssertEqual(aggregator.record(key(), network: network("2001:db8::1"), host: "b.test", port: 8443, now: 1_200), 3)
        XCTAssertEqual(aggregator.views(reporting: origin, threshold: 3, now: 1_200), ["default"])
        XCTAssertEqual(aggregator.views(reporting: origin, threshold: 1, now: 1_200), ["default", "other"])
        XCTAssertEqual(aggregator.target(key()).map { "\($0.host):\($0.port)" }, "b.test:8443")
        // The window slides: at 1,311 the first network (last seen at 1,010) is out.
        XCTAssertEqual(aggregator.networks(key(), now: 1_310), 3)
        XCTAssertEqual(aggregator.networks(key(), now: 1_311), 2)
        XCTAssertEqual(aggregator.networks(key(), now: 1_501), 0)
        aggregator.expire(now: 1_501)
        XCTAssertEqual(aggregator.trackedKeys, 0)
    }

    func testAFullPairForgetsItsOldestNetworkAndCountsIt() {
        var bounds = HTTPDNSReportAggregator.Bounds()
        bounds.maxNetworksPerKey = 4
        var aggregator = HTTPDNSReportAggregator(window: 300, bounds: bounds)
        for index in 0..<6 {
            aggregator.record(key(), network: network("198.51.\(index).1"), host: "a.test", port: 443, now: 1_000 + Double(index))
        }
        XCTAssertEqual(aggregator.networks(key(), now: 1_010), 4)
        XCTAssertEqual(aggregator.evictedNetworks, 2)
        // Expired networks make room first, without counting.
        aggregator.record(key(), network: network("198.51.9.1"), host: "a.test", port: 443, now: 1_400)
        XCTAssertEqual(aggregator.evictedNetworks, 2)
        XCTAssertEqual(aggregator.networks(key(), now: 1_400), 1)
    }

    func testAFullTableDropsTheLeastRecentlyReportedEighth() {
        var bounds = HTTPDNSReportAggregator.Bounds()
        bounds.maxKeys = 16
        var aggregator = HTTPDNSReportAggregator(window: 300, bounds: bounds)
        for index in 0..<16 {
            aggregator.record(key(address: HTTPDNSIPAddress("192.0.2.\(index)")), network: network("198.51.100.1"), host: "a.test", port: 443, now: 1_000 + Double(index))
        }
        aggregator.record(key(address: HTTPDNSIPAddress("192.0.2.100")), network: network("198.51.100.1"), host: "a.test", port: 443, now: 1_100)
        XCTAssertEqual(aggregator.trackedKeys, 15)
        XCTAssertEqual(aggregator.evictedKeys, 2)
        XCTAssertEqual(aggregator.networks(key(address: HTTPDNSIPAddress("192.0.2.0")), now: 1_100), 0)
        XCTAssertEqual(aggregator.networks(key(address: HTTPDNSIPAddress("192.0.2.2")), now: 1_100), 1)
    }

    /// The acceptance figure: 100,000 reports from 10,000 networks, spread over 2,000 addresses in
    /// two views, never hold more than the bounds (here 1,000 pairs × 32 networks = 32,000
    /// sightings of 16 bytes: about 0.5 MiB, plus the pairs); and the busiest still reads.
    func testAHundredThousandReportsFromTenThousandNetworksStayBounded() {
        var bounds = HTTPDNSReportAggregator.Bounds()
        bounds.maxKeys = 1_000
        bounds.maxNetworksPerKey = 32
        var aggregator = HTTPDNSReportAggregator(window: 300, bounds: bounds)
        var peakKeys = 0
        var peakNetworks = 0
        let started = ContinuousClock.now
        for index in 0..<100_000 {
            let client = HTTPDNSIPAddress(bytes: [10, UInt8(index % 10_000 / 256), UInt8(index % 10_000 % 256), 1])!
            let address = HTTPDNSIPAddress(bytes: [192, 0, UInt8(index % 2_000 / 256), UInt8(index % 2_000 % 256)])!
            aggregator.record(
                .init(address: address, view: index % 3 == 0 ? "a" : "b"), network: HTTPDNSReportNetwork(client: client), host: "a.test", port: 443,
                now: 1_000 + Double(index) / 1_000)
            if index % 1_000 == 0 {
                XCTAssertEqual(aggregator.trackedNetworks, aggregator.recountedNetworks)
                peakKeys = max(peakKeys, aggregator.trackedKeys)
                peakNetworks = max(peakNetworks, aggregator.trackedNetworks)
            }
        }
        peakKeys = max(peakKeys, aggregator.trackedKeys)
        peakNetworks = max(peakNetworks, aggregator.trackedNetworks)
        XCTAssertLessThanOrEqual(peakKeys, 1_000)
        XCTAssertLessThanOrEqual(peakNetworks, 32_000)
        XCTAssertGreaterThan(aggregator.evictedKeys, 0)
        XCTAssertEqual(aggregator.busiest(limit: 5, now: 1_100).count, 5)
        XCTAssertLessThan(ContinuousClock.now - started, .seconds(30))
    }

    /// Issue 32: 2,000 batches from 500 /24 networks cycling through 12,000 (address, view) pairs,
    /// beside three honest networks that report one address a few times each. Without bounds per
    /// reporter every pair was evicted before its third network came: the honest pair never
    /// decided. The flood now evicts its own pairs (its networks hold more than their share), and
    /// no network holds more than its quota.
    func testAFloodFromManyNetworksEvictsItsOwnStateAndThreeHonestNetworksStillDecide() {
        var aggregator = HTTPDNSReportAggregator(window: 300)
        let honest = key("carrier-a", address: HTTPDNSIPAddress("203.0.113.7"))
        let honestNetworks = ["100.64.1.9", "100.64.2.9", "100.64.3.9"].map(network)
        let token: UInt64 = 0x1001
        var pair = 0
        var peakKeys = 0
        for batch in 0..<2_000 {
            let flooder = HTTPDNSReportNetwork(client: HTTPDNSIPAddress(bytes: [10, UInt8(batch % 500 / 200), UInt8(batch % 500 % 200), 1])!)
            let now = 1_000 + Double(batch) * 0.1
            for _ in 0..<50 {
                let address = HTTPDNSIPAddress(bytes: [192, 0, UInt8(pair % 6_000 / 250), UInt8(pair % 250)])!
                aggregator.record(key(pair % 12_000 < 6_000 ? "carrier-a" : "carrier-b", address: address), network: flooder,
                                  credential: token, host: "a.test", port: 443, now: now)
                pair += 1
            }
            XCTAssertLessThanOrEqual(aggregator.pairs(createdBy: flooder), aggregator.bounds.maxKeysPerNetwork)
            // The honest networks report now and then, under the same token (it ships in every app).
            if batch % 400 == 0 {
                for network in honestNetworks.prefix(batch / 400 + 1) {
                    aggregator.record(honest, network: network, credential: token, host: "app.test", port: 443, now: now)
                }
            }
            peakKeys = max(peakKeys, aggregator.trackedKeys)
        }
        XCTAssertGreaterThan(aggregator.evictedKeys, 30_000, "the flood cycled through far more pairs than the table holds")
        XCTAssertLessThanOrEqual(peakKeys, aggregator.bounds.maxKeys)
        XCTAssertEqual(aggregator.networks(honest, now: 1_200), 3, "the honest pair survived the flood with its three networks")
        XCTAssertEqual(aggregator.views(reporting: HTTPDNSIPAddress("203.0.113.7")!, threshold: 3, now: 1_200), ["carrier-a"])
        XCTAssertEqual(aggregator.trackedNetworks, aggregator.recountedNetworks)
    }

    /// A network past its quota gives up its own earliest pair, not anyone else's.
    func testANetworkPastItsQuotaLosesItsOwnEarliestPair() {
        var bounds = HTTPDNSReportAggregator.Bounds()
        bounds.maxKeysPerNetwork = 4
        var aggregator = HTTPDNSReportAggregator(window: 300, bounds: bounds)
        aggregator.record(key(address: HTTPDNSIPAddress("192.0.2.200")), network: network("198.51.7.1"), host: "a.test", port: 443, now: 999)
        for index in 0..<6 {
            aggregator.record(key(address: HTTPDNSIPAddress("192.0.2.\(index)")), network: network("198.51.100.1"), host: "a.test", port: 443,
                              now: 1_000 + Double(index))
        }
        XCTAssertEqual(aggregator.pairs(createdBy: network("198.51.100.1")), 4)
        XCTAssertEqual(aggregator.trackedKeys, 5)
        XCTAssertEqual(aggregator.evictedKeys, 2)
        XCTAssertEqual(aggregator.networks(key(address: HTTPDNSIPAddress("192.0.2.0")), now: 1_010), 0, "its earliest went")
        XCTAssertEqual(aggregator.networks(key(address: HTTPDNSIPAddress("192.0.2.5")), now: 1_010), 1)
        XCTAssertEqual(aggregator.networks(key(address: HTTPDNSIPAddress("192.0.2.200")), now: 1_010), 1, "another network's pair stays")
        // Another network adding a sighting to one of its pairs does not count against its own quota.
        aggregator.record(key(address: HTTPDNSIPAddress("192.0.2.5")), network: network("198.51.8.1"), host: "a.test", port: 443, now: 1_011)
        XCTAssertEqual(aggregator.pairs(createdBy: network("198.51.8.1")), 0)
        XCTAssertEqual(aggregator.networks(key(address: HTTPDNSIPAddress("192.0.2.5")), now: 1_011), 2)
    }
}
