import DNSWire
import DNSZoneTransfer
import Foundation
import HTTPDNSCore
import HTTPDNSServer
import HTTPDNSTestSupport
import XCTest

/// `httpdns serve --secondary` following Knot DNS, a real primary, through the binary (issue 24):
/// the zone arrives by AXFR with TSIG, changes by IXFR at the SOA's refresh, `/ready` waits for it,
/// and the JSON zone is the overlay of checks.
final class ServeSecondaryTests: ToolTestCase {
    func testFollowsKnotByAXFRAndIXFRWithTSIGAndTheOverlayGivesChecks() throws {
        // Loopback addresses: the overlay's check probes them.
        let knot = try KnotServer(refresh: 1, retry: 1, records: ["www 300 A 127.0.0.2", "www 300 A 127.0.0.3"])
        defer { knot.stop() }
        let directory = try temporaryDirectory()
        let overlay = directory.appendingPathComponent("overlay.json")
        // The overlay's own addresses are not served: the primary's are, with the overlay's check.
        let closed = try closedPort()
        try Data(#"{"www.example.test": {"A": ["127.0.0.99"], "check": {"type": "tcp", "port": \#(closed), "interval": 60}}}"#.utf8)
            .write(to: overlay)
        let (server, urls) = try startServe([
            "--listen", "127.0.0.1:0", "--secondary", "example.test=127.0.0.1:\(knot.port)",
            "--tsig-file", try keyFile(knot, in: directory), "--zone", overlay.path,
        ])
        defer { assertStopsCleanly(server) }
        try waitUntil("ready once the zone is loaded", server) { try curl("\(urls[0])/ready") == ("ready", "200") }
        XCTAssertEqual(try curl("\(urls[0])/d?dn=www.example.test").body.split(separator: ",").first, "127.0.0.2;127.0.0.3")
        XCTAssertTrue(String(decoding: server.stderr, as: UTF8.self).contains("zone example.test serial 1 loaded by AXFR"))
        let metrics = try curl("\(urls[0])/metrics").body
        XCTAssertTrue(metrics.contains("httpdns_origin_up{address=\"127.0.0.2\",check=\"tcp:\(closed)\"}"), "the overlay's check on the primary's address:\n\(metrics)")
        XCTAssertFalse(metrics.contains("127.0.0.99"), "the overlay's own address is not served or checked")

        try knot.change(set: ["new 300 A 127.0.0.9"], unset: ["www 300 A 127.0.0.2"])
        try waitUntil("the change at the next refresh", server) {
            try curl("\(urls[0])/d?dn=new.example.test").body.hasPrefix("127.0.0.9")
        }
        XCTAssertEqual(try curl("\(urls[0])/d?dn=www.example.test").body.split(separator: ",").first, "127.0.0.3")
        XCTAssertTrue(String(decoding: server.stderr, as: UTF8.self).contains("zone example.test serial 2 loaded by IXFR"))
    }

    func testANotifyFromThePrimaryBringsTheChangeAtOnceAndForgedOnesChangeNothing() throws {
        let notifyPort = try Dnsmasq.freePort(on: HTTPDNSIPAddress("127.0.0.1")!)
        // REFRESH 300 s: a change seen within seconds came by the NOTIFY.
        let knot = try KnotServer(refresh: 300, retry: 300, records: ["www 300 A 127.0.0.2"], notify: notifyPort)
        defer { knot.stop() }
        let directory = try temporaryDirectory()
        let (server, urls) = try startServe([
            "--listen", "127.0.0.1:0", "--secondary", "example.test=127.0.0.1:\(knot.port)",
            "--tsig-file", try keyFile(knot, in: directory), "--notify-listen", "127.0.0.1:\(notifyPort)",
        ])
        defer { assertStopsCleanly(server) }
        XCTAssertTrue(String(decoding: server.stdout, as: UTF8.self).contains("notify on udp://127.0.0.1:\(notifyPort)"))
        try waitUntil("the first zone", server) { try curl("\(urls[0])/ready") == ("ready", "200") }

        try knot.change(set: ["new 300 A 127.0.0.9"])
        try waitUntil("the change, brought by Knot's NOTIFY", server) {
            try curl("\(urls[0])/d?dn=new.example.test").body.hasPrefix("127.0.0.9")
        }
        XCTAssertTrue(String(decoding: server.stderr, as: UTF8.self).contains("zone example.test serial 2 loaded by IXFR"))

        // Forged: unsigned from the primary's address (NOTAUTH), signed with another key (NOTAUTH),
        // from an address that is no primary (REFUSED). None is taken.
        let stranger = try DNSTSIGKey(commandLine: "hmac-sha256:\(knot.keyName):\(Data((0..<32).map { UInt8($0) }).base64EncodedString())")
        XCTAssertEqual(try sendNotify(to: notifyPort, from: "127.0.0.1", signedWith: nil), 9)
        XCTAssertEqual(try sendNotify(to: notifyPort, from: "127.0.0.1", signedWith: stranger), 9)
        let real = try DNSTSIGKey(commandLine: "hmac-sha256:\(knot.keyName):\(knot.keySecret)")
        // Signed with the zone's key and verified: the refusals are signed too (RFC 8945 §5.3, issue 32).
        let notPrimary = try notifyExchange(to: notifyPort, from: "127.0.0.5", zone: "example.test", signedWith: real)
        XCTAssertEqual(notPrimary.rcode, 5)
        XCTAssertTrue(notPrimary.signed, "a REFUSED to a verified signed NOTIFY carries a TSIG that verifies")
        let notFollowed = try notifyExchange(to: notifyPort, from: "127.0.0.1", zone: "other.test", signedWith: real)
        XCTAssertEqual(notFollowed.rcode, 9)
        XCTAssertTrue(notFollowed.signed, "a NOTAUTH to a verified signed NOTIFY carries a TSIG that verifies")
        XCTAssertFalse(try notifyExchange(to: notifyPort, from: "127.0.0.1", zone: "other.test", signedWith: stranger).signed)
        // The real key from the primary's address: accepted (NOERROR).
        XCTAssertEqual(try sendNotify(to: notifyPort, from: "127.0.0.1", signedWith: real), 0)
        XCTAssertTrue(String(decoding: server.stderr, as: UTF8.self).contains("NOTIFY refused"))
    }

    func testAWrongKeyLeavesTheServiceNotReadyAndSaysWhy() throws {
        let knot = try KnotServer(records: ["www 300 A 192.0.2.1"])
        defer { knot.stop() }
        let directory = try temporaryDirectory()
        let wrong = Data((0..<32).map { UInt8($0) }).base64EncodedString()
        let (server, urls) = try startServe([
            "--listen", "127.0.0.1:0", "--secondary", "example.test=127.0.0.1:\(knot.port)",
            "--tsig-file", try keyFile(knot, secret: wrong, in: directory),
        ])
        defer { assertStopsCleanly(server) }
        try waitUntil("the refusal said", server) { String(decoding: server.stderr, as: UTF8.self).contains("zone example.test: no transfer:") }
        XCTAssertEqual(try curl("\(urls[0])/ready").code, "503")
        XCTAssertEqual(try curl("\(urls[0])/ready").body, "loading example.test")
        XCTAssertEqual(try curl("\(urls[0])/health").body, "alive")
    }

    func testBadSecondaryOptionsAreRefused() throws {
        let directory = try temporaryDirectory()
        assertUsage(try run(["serve", "--listen", "127.0.0.1:0", "--secondary", "example.test"]))
        assertUsage(try run(["serve", "--listen", "127.0.0.1:0", "--secondary", "example.test=not-an-address"]))
        let key = directory.appendingPathComponent("k.key").path
        try Data("key \"k\" { algorithm hmac-sha256; secret \"AAAA\"; };\n".utf8).write(to: URL(fileURLWithPath: key))
        assertUsage(try run(["serve", "--listen", "127.0.0.1:0", "--tsig-file", key]))
        let garbage = directory.appendingPathComponent("garbage.key").path
        try Data("not a key file".utf8).write(to: URL(fileURLWithPath: garbage))
        let result = try run(["serve", "--listen", "127.0.0.1:0", "--secondary", "example.test=127.0.0.1", "--tsig-file", garbage])
        assertFailure(result)
        XCTAssertTrue(result.stderrText.contains(garbage), result.stderrText)
    }

    /// The last good zone is kept on disk and served after a restart whose primary does not answer
    /// (blackholed: its SYNs are dropped), `/ready` saying where it came from; past its SOA expire
    /// since the primary last confirmed it, the copy is not served; a damaged copy is not used.
    func testTheLastGoodZoneOnDiskIsServedAfterARestartWithThePrimaryBlackholedUntilItExpires() throws {
        let knot = try KnotServer(refresh: 1, retry: 1, expire: 3600, records: ["www 300 A 127.0.0.2"])
        defer { knot.stop() }
        let directory = try temporaryDirectory()
        let copies = directory.appendingPathComponent("zones").path
        let key = try keyFile(knot, in: directory)
        let (first, firstURLs) = try startServe([
            "--listen", "127.0.0.1:0", "--secondary", "example.test=127.0.0.1:\(knot.port)", "--tsig-file", key, "--secondary-dir", copies,
        ])
        try waitUntil("the first zone", first) { try curl("\(firstURLs[0])/ready") == ("ready", "200") }
        try knot.change(set: ["new 300 A 127.0.0.9"])
        try waitUntil("serial 2 at the next refresh", first) { try curl("\(firstURLs[0])/d?dn=new.example.test").body.hasPrefix("127.0.0.9") }
        assertStopsCleanly(first)
        let copy = copies + "/example.test.httpdns-zone"
        let bytes = try XCTUnwrap(FileManager.default.contents(atPath: copy), "the copy is written")
        XCTAssertTrue(bytes.starts(with: Data("swift-httpdns-zone 1 sha256 ".utf8)))
        XCTAssertEqual(try DNSZoneCopy.decode(Array(bytes), zone: DNSName("example.test")).soa.serial, 2)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: copies), ["example.test.httpdns-zone"], "no temporary file left")

        // The primary blackholed: served from disk at once, and /ready says so.
        let blackhole = try StalledListener(address: "127.0.0.1")
        let restartArguments = [
            "--listen", "127.0.0.1:0", "--secondary", "example.test=127.0.0.1:\(blackhole.port)", "--tsig-file", key, "--secondary-dir", copies,
        ]
        let (second, secondURLs) = try startServe(restartArguments)
        XCTAssertEqual(
            try curl("\(secondURLs[0])/ready").body, "ready\nexample.test serial 2 from disk: no primary has confirmed it since the start")
        XCTAssertEqual(try curl("\(secondURLs[0])/d?dn=new.example.test").body.split(separator: ",").first, "127.0.0.9")
        XCTAssertTrue(try curl("\(secondURLs[0])/metrics").body.contains("httpdns_zone_serial{zone=\"example.test\"} 2\n"))
        XCTAssertTrue(String(decoding: second.stderr, as: UTF8.self).contains("zone example.test serial 2 served from the copy on disk"))
        assertStopsCleanly(second)

        // Unconfirmed for longer than its SOA expire (3600 s): not served.
        var times = [timeval(tv_sec: time(nil) - 3_700, tv_usec: 0), timeval(tv_sec: time(nil) - 3_700, tv_usec: 0)]
        XCTAssertEqual(utimes(copy, &times), 0)
        let (third, thirdURLs) = try startServe(restartArguments)
        XCTAssertEqual(try curl("\(thirdURLs[0])/ready").code, "503")
        XCTAssertTrue(try curl("\(thirdURLs[0])/ready").body.hasPrefix("expired example.test serial 2"))
        XCTAssertFalse(try curl("\(thirdURLs[0])/d?dn=new.example.test").body.hasPrefix("127.0.0.9"), "an expired zone is not served")
        XCTAssertTrue(String(decoding: third.stderr, as: UTF8.self).contains("s ago; not served until a primary answers"))
        assertStopsCleanly(third)

        // Damaged: not used at all.
        var damaged = bytes
        damaged[damaged.count - 3] ^= 0x01
        try damaged.write(to: URL(fileURLWithPath: copy))
        let (fourth, fourthURLs) = try startServe(restartArguments)
        XCTAssertEqual(try curl("\(fourthURLs[0])/ready").body, "loading example.test")
        XCTAssertTrue(String(decoding: fourth.stderr, as: UTF8.self).contains("is not used: the digest does not match"))
        assertStopsCleanly(fourth)
        withExtendedLifetime(blackhole) {}
    }

    /// A view with a transfer of its own (its own key, here its own primary standing in for the
    /// primary's view): its clients get that transfer's records, names it lacks have none for them,
    /// a CNAME is the same for all, and everyone else gets the zone's own; a change in the view's
    /// zone reaches the view only.
    func testAViewTakesItsRecordsFromATransferOfItsOwn() throws {
        let zone = try KnotServer(refresh: 1, retry: 1, records: [
            "www 300 A 192.0.2.2", "both 300 A 192.0.2.4", "only-zone 300 A 192.0.2.6", "alias 300 CNAME www",
        ])
        defer { zone.stop() }
        let view = try KnotServer(refresh: 1, retry: 1, records: [
            "www 300 A 198.51.100.3", "both 300 A 198.51.100.5", "only-view 300 A 198.51.100.7", "alias 300 CNAME www",
        ], keyName: "carrier-a-key")
        defer { view.stop() }
        let directory = try temporaryDirectory()
        let views = directory.appendingPathComponent("views.json")
        try Data("""
            {"views": [{"name": "carrier-a", "networks": ["10.1.0.0/16"],
                        "transfer": {"tsigKey": "\(URL(fileURLWithPath: try keyFile(view, in: directory)).lastPathComponent)",
                                     "primaries": ["127.0.0.1:\(view.port)"]}}]}
            """.utf8).write(to: views)
        let copies = directory.appendingPathComponent("copies").path
        let (server, urls) = try startServe([
            "--listen", "127.0.0.1:0", "--secondary", "example.test=127.0.0.1:\(zone.port)", "--tsig-file", try keyFile(zone, in: directory),
            "--views", views.path, "--secondary-dir", copies,
        ])
        defer { assertStopsCleanly(server) }
        try waitUntil("ready once both transfers are in", server) { try curl("\(urls[0])/ready") == ("ready", "200") }
        func ask(_ name: String, from client: String) throws -> String {
            String(try curl("\(urls[0])/d?dn=\(name).example.test&ip=\(client)").body.split(separator: ",").first ?? "")
        }
        XCTAssertEqual(try ask("www", from: "10.1.2.3"), "198.51.100.3")
        XCTAssertEqual(try ask("www", from: "10.9.2.3"), "192.0.2.2")
        XCTAssertEqual(try ask("both", from: "10.1.2.3"), "198.51.100.5")
        XCTAssertEqual(try ask("only-view", from: "10.1.2.3"), "198.51.100.7")
        // An empty DNSPod answer, as for a name nobody has.
        let none = try ask("nowhere", from: "10.9.2.3")
        XCTAssertFalse(none.contains("."), none)
        XCTAssertEqual(try ask("only-view", from: "10.9.2.3"), none, "the view's names are the view's")
        XCTAssertEqual(try ask("only-zone", from: "10.1.2.3"), none, "the view's transfer is its whole zone")
        XCTAssertEqual(try ask("only-zone", from: "10.9.2.3"), "192.0.2.6")
        XCTAssertEqual(try ask("alias", from: "10.1.2.3"), "198.51.100.3", "the CNAME, then the view's www")
        let metrics = try curl("\(urls[0])/metrics").body
        XCTAssertTrue(metrics.contains("httpdns_zone_serial{zone=\"example.test\"} 1\n"), metrics)
        XCTAssertTrue(metrics.contains("httpdns_zone_serial{zone=\"example.test\",view=\"carrier-a\"} 1\n"), metrics)
        XCTAssertTrue(FileManager.default.fileExists(atPath: copies + "/example.test+carrier-a.httpdns-zone"))

        try view.change(set: ["www 300 A 198.51.100.33"], unset: ["www 300 A 198.51.100.3"])
        try waitUntil("the view's change", server) { try ask("www", from: "10.1.2.3") == "198.51.100.33" }
        XCTAssertEqual(try ask("www", from: "10.9.2.3"), "192.0.2.2", "the zone's clients see no change")
        XCTAssertTrue(String(decoding: server.stderr, as: UTF8.self).contains("zone example.test (view carrier-a) serial 2 loaded by IXFR"))
    }

    /// BIND's split horizon (issue 24: "a TSIG key per view, as BIND serves views"): named serves the
    /// zone in a view matched by carrier-a's key and a default one; `serve` follows the zone with
    /// its key and the view with carrier-a's, from the same primary. Each client view gets its
    /// BIND view's records, and an update made in BIND's carrier-a view reaches carrier-a's clients
    /// by that view's NOTIFY (REFRESH is 300 s), the others' answers unchanged.
    func testBINDViewsSelectedByKeyAreTheViewsAnswers() throws {
        let carrier = NamedServer.View(name: "carrier-a", keyName: "carrier-a-key", records: ["www 300 A 198.51.100.3", "only-view 300 A 198.51.100.7"])
        let named = try NamedServer(refresh: 300, retry: 300, records: ["www 300 A 192.0.2.2", "only-zone 300 A 192.0.2.6"], views: [carrier])
        defer { named.stop() }
        let directory = try temporaryDirectory()
        let carrierKey = directory.appendingPathComponent("carrier-a.key")
        try Data("key \"\(carrier.keyName)\" { algorithm hmac-sha256; secret \"\(carrier.keySecret)\"; };\n".utf8).write(to: carrierKey)
        let views = directory.appendingPathComponent("views.json")
        try Data(#"{"views": [{"name": "carrier-a", "networks": ["10.1.0.0/16"], "transfer": {"tsigKey": "carrier-a.key"}}]}"#.utf8).write(to: views)
        let instance = try startSecondary(primary: named.port, keyFile: try keyFile(named, in: directory), ["--views", views.path])
        defer { assertStopsCleanly(instance.server) }
        try named.reconfigure(notify: [instance.notifyPort])
        try waitUntil("ready with both views", instance.server) { try curl("\(instance.url)/ready") == ("ready", "200") }
        func ask(_ name: String, from client: String) throws -> String {
            String(try curl("\(instance.url)/d?dn=\(name).example.test&ip=\(client)").body.split(separator: ",").first ?? "")
        }
        let none = try ask("nowhere", from: "10.9.2.3")
        XCTAssertEqual(try ask("www", from: "10.1.2.3"), "198.51.100.3")
        XCTAssertEqual(try ask("www", from: "10.9.2.3"), "192.0.2.2")
        XCTAssertEqual(try ask("only-view", from: "10.1.2.3"), "198.51.100.7")
        XCTAssertEqual(try ask("only-view", from: "10.9.2.3"), none)
        XCTAssertEqual(try ask("only-zone", from: "10.1.2.3"), none)
        XCTAssertEqual(try ask("only-zone", from: "10.9.2.3"), "192.0.2.6")

        try named.change(view: "carrier-a", set: ["www 300 A 198.51.100.33"], unset: ["www 300 A 198.51.100.3"])
        try waitUntil("the carrier-a view's update, by its NOTIFY", instance.server) { try ask("www", from: "10.1.2.3") == "198.51.100.33" }
        XCTAssertEqual(try ask("www", from: "10.9.2.3"), "192.0.2.2", "the default view is unchanged")
        XCTAssertTrue(String(decoding: instance.server.stderr, as: UTF8.self).contains("zone example.test (view carrier-a) serial 2 loaded by IXFR"))
        // BIND says which of its views each transfer came from.
        XCTAssertTrue(named.log.contains("view carrier-a: transfer of 'example.test/IN': IXFR started"), named.log)
        XCTAssertTrue(named.log.contains("view default: transfer of 'example.test/IN': AXFR started"), named.log)
    }
}
