import DNSWire
import DNSZoneTransfer
import Foundation
import HTTPDNSCore
import HTTPDNSTestSupport
import XCTest

/// What `httpdns serve --secondary` does when a transfer goes wrong (issue 24): every time the zone
/// in service stays and answers as before, stderr says why, and `/metrics` counts it by reason.
/// Against BIND and Knot where a real primary can be made to misbehave, and a scripted primary for
/// a stream cut short.
final class ServeSecondaryFailureTests: ToolTestCase {
    private let zone = "zone=\"example.test\""

    /// The count of `result` in `httpdns_zone_transfers_total`, 0 when absent.
    private func transfers(_ result: String, at url: String) throws -> Double {
        try metric("httpdns_zone_transfers_total{\(zone),result=\"\(result)\"}", at: url) ?? 0
    }

    /// The count of `reason` in `httpdns_zone_transfer_failures_total`, 0 when absent.
    private func failures(_ reason: String, at url: String) throws -> Double {
        try metric("httpdns_zone_transfer_failures_total{\(zone),reason=\"\(reason)\"}", at: url) ?? 0
    }

    private func stderr(_ instance: SecondaryInstance) -> String { String(decoding: instance.server.stderr, as: UTF8.self) }

    func testAKeyRolledOverOnBINDAloneKeepsTheOldZoneAndCountsTheRefusals() throws {
        let named = try NamedServer(refresh: 1, retry: 1, records: ["www 300 A 127.0.1.1"])
        defer { named.stop() }
        let instance = try startSecondary(primary: named.port, keyFile: try keyFile(named, in: try temporaryDirectory()))
        defer { assertStopsCleanly(instance.server) }
        try waitUntil("the first zone", instance.server) { try address(of: "www.example.test", at: instance.url) == "127.0.1.1" }

        // The primary takes a new key, the instance still has the old one: serial 2 never comes.
        try named.restart(serial: 2, records: ["www 300 A 127.0.1.2"], keySecret: NamedServer.randomSecret())
        try waitUntil("the refusals counted", instance.server) { try failures("tsig", at: instance.url) >= 2 }
        XCTAssertEqual(try address(of: "www.example.test", at: instance.url), "127.0.1.1", "the old zone stays in service")
        XCTAssertEqual(try metric("httpdns_zone_serial{\(zone)}", at: instance.url), 1)
        XCTAssertGreaterThanOrEqual(try transfers("failed", at: instance.url), 2)
        XCTAssertEqual(try curl("\(instance.url)/ready").code, "200", "a zone is served")
        XCTAssertTrue(
            stderr(instance).contains("zone example.test: no transfer: 127.0.0.1:\(named.port): tsig in message 1: the primary refused our signature"),
            stderr(instance))
        XCTAssertTrue(named.log.contains("request has invalid signature"), "BIND says why:\n\(named.log)")
    }

    func testAPrimaryRestoredToAnOlderSerialIsRefusedAndTheNewerZoneKept() throws {
        let knot = try KnotServer(serial: 10, refresh: 300, retry: 1, records: ["www 300 A 127.0.1.10"])
        defer { knot.stop() }
        let instance = try startSecondary(primary: knot.port, keyFile: try keyFile(knot, in: try temporaryDirectory()))
        defer { assertStopsCleanly(instance.server) }
        try waitUntil("the first zone", instance.server) { try address(of: "www.example.test", at: instance.url) == "127.0.1.10" }

        // Restored from an old backup, the primary has serial 5, and announces it.
        try knot.restart(serial: 5, records: ["www 300 A 127.0.1.5"])
        let key = try DNSTSIGKey(commandLine: "hmac-sha256:\(knot.keyName):\(knot.keySecret)")
        XCTAssertEqual(try sendNotify(to: instance.notifyPort, from: "127.0.0.1", signedWith: key), 0)
        // The IXFR from 10 meets an older SOA; the AXFR tried next (at RETRY, 1 s) is not newer.
        try waitUntil("both refusals counted", instance.server) {
            try failures("serialWentBackwards", at: instance.url) >= 1 && failures("serialNotNewer", at: instance.url) >= 1
        }
        XCTAssertEqual(try address(of: "www.example.test", at: instance.url), "127.0.1.10", "the newer zone stays in service")
        XCTAssertEqual(try metric("httpdns_zone_serial{\(zone)}", at: instance.url), 10)
        XCTAssertTrue(stderr(instance).contains("serialWentBackwards in message 1: primary 5, ours 10"), stderr(instance))
        XCTAssertTrue(stderr(instance).contains("serial 5 is not newer than 10 (RFC 1982)"), stderr(instance))
    }

    func testAZoneThatBreaksTheZoneRulesIsRefusedAndTheNextChangeIsTaken() throws {
        let knot = try KnotServer(refresh: 300, retry: 300, records: ["www 300 A 127.0.1.1"])
        defer { knot.stop() }
        let instance = try startSecondary(primary: knot.port, keyFile: try keyFile(knot, in: try temporaryDirectory()))
        defer { assertStopsCleanly(instance.server) }
        try knot.reconfigure(notify: [instance.notifyPort])
        try waitUntil("the first zone", instance.server) { try address(of: "www.example.test", at: instance.url) == "127.0.1.1" }

        // A CNAME loop is a valid DNS zone to Knot, not to the zone rules: the whole of serial 2 is refused.
        try knot.change(set: ["new 300 A 127.0.1.9", "loop1 300 CNAME loop2", "loop2 300 CNAME loop1"])
        try waitUntil("the refusal counted", instance.server) { try transfers("rejected", at: instance.url) == 1 }
        XCTAssertEqual(try failures("checks", at: instance.url), 1)
        XCTAssertFalse(try curl("\(instance.url)/d?dn=new.example.test").body.contains("127.0.1.9"), "nothing of serial 2 is served")
        XCTAssertEqual(try address(of: "www.example.test", at: instance.url), "127.0.1.1")
        XCTAssertEqual(try metric("httpdns_zone_serial{\(zone)}", at: instance.url), 1)
        XCTAssertTrue(stderr(instance).contains("zone example.test serial 2: keeping the old zone:"), stderr(instance))
        XCTAssertTrue(stderr(instance).contains("loop"), stderr(instance))

        // The loop mended, serial 3 comes by IXFR from the refused serial 2, which the primary holds too.
        try knot.change(unset: ["loop1 300 CNAME loop2", "loop2 300 CNAME loop1"])
        try waitUntil("serial 3", instance.server) { try address(of: "new.example.test", at: instance.url) == "127.0.1.9" }
        XCTAssertEqual(try metric("httpdns_zone_serial{\(zone)}", at: instance.url), 3)
        XCTAssertTrue(stderr(instance).contains("zone example.test serial 3 loaded by IXFR"), stderr(instance))
    }

    func testATransferCutShortIsRefusedAndTheOldZoneKept() throws {
        let apex = try DNSName("example.test")
        // Serial 1 whole; after it, serial 2 cut in the middle of its third message of five (REFRESH 1 s).
        let primary = try FakeTransferPrimary { query, index in
            let hosts = (0..<200).map { FakeTransferPrimary.a("host\($0)", in: apex, "127.0.2.\($0 % 250)") }
            let www = FakeTransferPrimary.a("www", in: apex, index == 1 ? "127.0.1.1" : "127.0.1.2")
            let answers = FakeTransferPrimary.zone(apex, serial: index == 1 ? 1 : 2, refresh: 1, retry: 1, records: [www] + hosts)
            let stream = FakeTransferPrimary.stream(answering: query, answers: answers, perMessage: 50)
            return index == 1 ? stream : Array(stream.prefix(stream.count / 2))
        }
        defer { primary.stop() }
        let instance = try startSecondary(primary: primary.port, keyFile: nil)
        defer { assertStopsCleanly(instance.server) }
        try waitUntil("the first zone", instance.server) { try address(of: "www.example.test", at: instance.url) == "127.0.1.1" }
        try waitUntil("cut transfers counted", instance.server) { try failures("incomplete", at: instance.url) >= 2 }
        XCTAssertEqual(try address(of: "www.example.test", at: instance.url), "127.0.1.1", "the old zone stays in service")
        XCTAssertEqual(try metric("httpdns_zone_serial{\(zone)}", at: instance.url), 1)
        XCTAssertTrue(stderr(instance).contains("zone example.test: no transfer: 127.0.0.1:\(primary.port): incomplete"), stderr(instance))
        XCTAssertTrue(primary.queries.dropFirst().contains { $0.questions.first?.type == .IXFR }, "an IXFR first")
        XCTAssertTrue(primary.queries.dropFirst(2).contains { $0.questions.first?.type == .AXFR }, "then AXFR")
    }
}
