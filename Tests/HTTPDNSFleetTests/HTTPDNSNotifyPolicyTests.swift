import DNSSockets
import DNSWire
import DNSZoneTransfer
import HTTPDNSCore
@testable import HTTPDNSFleet
import XCTest

/// What a secondary answers to a NOTIFY and whether it checks the zone (RFC 1996 §3.10, RFC 8945),
/// without sockets.
final class HTTPDNSNotifyPolicyTests: XCTestCase {
    private let primary = HTTPDNSIPAddress("192.0.2.53")!

    private func policy(key: DNSTSIGKey? = nil) throws -> HTTPDNSNotifyPolicy {
        HTTPDNSNotifyPolicy(zones: [
            HTTPDNSSecondary.Configuration(zone: try DNSName("example.test"), primaries: [SocketAddress(address: primary, port: 53)], key: key),
        ])
    }

    private func rcode(_ answer: [UInt8]?) -> Int? { answer.flatMap { $0.count >= 12 ? Int($0[3] & 0x0f) : nil } }

    func testAnswersAndDecisions() throws {
        let notify = try DNSNotify.request(zone: DNSName("example.test"), id: 7).encode()
        let plain = try policy()
        let accepted = plain.handle(notify, from: primary, now: 1_800_000_000)
        XCTAssertEqual(accepted.zone, try DNSName("example.test"))
        XCTAssertEqual(rcode(accepted.answer), 0)
        XCTAssertNil(accepted.refusal)
        // IPv4-mapped source: the same primary.
        XCTAssertNotNil(plain.handle(notify, from: HTTPDNSIPAddress("::ffff:192.0.2.53")!, now: 0).zone)

        let stranger = plain.handle(notify, from: HTTPDNSIPAddress("198.51.100.1")!, now: 0)
        XCTAssertNil(stranger.zone)
        XCTAssertEqual(rcode(stranger.answer), 5, "REFUSED")
        let other = plain.handle(try DNSNotify.request(zone: DNSName("other.test"), id: 8).encode(), from: primary, now: 0)
        XCTAssertNil(other.zone)
        XCTAssertEqual(rcode(other.answer), 9, "NOTAUTH")
        var query = try DNSNotify.request(zone: DNSName("example.test"), id: 9)
        query.opcode = 0
        let notNotify = plain.handle(try query.encode(), from: primary, now: 0)
        XCTAssertNil(notNotify.zone)
        XCTAssertEqual(rcode(notNotify.answer), 4, "NOTIMP")
        let garbage = plain.handle([1, 2, 3], from: primary, now: 0)
        XCTAssertNil(garbage.zone)
        XCTAssertNil(garbage.answer, "no answer to what is not a DNS message")

        let key = try DNSTSIGKey(commandLine: "hmac-sha256:xfr:" + Data(repeating: 7, count: 32).base64EncodedString())
        let signedPolicy = try policy(key: key)
        XCTAssertEqual(rcode(signedPolicy.handle(notify, from: primary, now: 1_800_000_000).answer), 9, "unsigned while transfers are signed: NOTAUTH")
        let signed = try DNSTSIG.sign(try DNSNotify.request(zone: DNSName("example.test"), id: 10), key: key, now: 1_800_000_000)
        let good = signedPolicy.handle(signed.bytes, from: primary, now: 1_800_000_010)
        XCTAssertNotNil(good.zone)
        // The answer is signed with the request's MAC, as RFC 8945 §5.3 has a response signed.
        let answer = try DNSReceivedMessage(decoding: try XCTUnwrap(good.answer))
        XCTAssertNoThrow(try DNSTSIG.verify(answer, key: key, requestMAC: signed.mac, now: 1_800_000_010))
        XCTAssertNil(signedPolicy.handle(signed.bytes, from: primary, now: 1_800_000_000 + 3_600).zone, "outside the fudge: BADTIME")
    }

    /// Issue 32, RFC 8945 §5.3: a request signed with a known key that verified gets a signed
    /// response, refusals included: a zone not followed (NOTAUTH) and a sender that is not a primary
    /// (REFUSED). A signature that does not verify still gets an unsigned refusal.
    func testRefusalsOfAVerifiedSignedNotifyAreSigned() throws {
        let key = try DNSTSIGKey(commandLine: "hmac-sha256:xfr:" + Data(repeating: 7, count: 32).base64EncodedString())
        let signedPolicy = try policy(key: key)
        let now: UInt64 = 1_800_000_000
        let cases: [(zone: String, source: HTTPDNSIPAddress, rcode: Int)] = [
            ("other.test", primary, 9), ("example.test", HTTPDNSIPAddress("198.51.100.1")!, 5),
        ]
        for (zone, source, expected) in cases {
            let signed = try DNSTSIG.sign(try DNSNotify.request(zone: DNSName(zone), id: 20), key: key, now: now)
            let outcome = signedPolicy.handle(signed.bytes, from: source, now: now)
            XCTAssertNil(outcome.zone, zone)
            XCTAssertEqual(rcode(outcome.answer), expected, zone)
            let answer = try DNSReceivedMessage(decoding: try XCTUnwrap(outcome.answer))
            XCTAssertNoThrow(try DNSTSIG.verify(answer, key: key, requestMAC: signed.mac, now: now), "\(zone) from \(source): signed")
        }
        let stranger = try DNSTSIGKey(commandLine: "hmac-sha256:xfr:" + Data(repeating: 8, count: 32).base64EncodedString())
        let forged = try DNSTSIG.sign(try DNSNotify.request(zone: DNSName("other.test"), id: 21), key: stranger, now: now)
        let refused = try XCTUnwrap(signedPolicy.handle(forged.bytes, from: primary, now: now).answer)
        XCTAssertEqual(rcode(refused), 9)
        XCTAssertNil(try DNSReceivedMessage(decoding: refused).tsigRecord(), "a signature that does not verify: unsigned")
    }

    /// A zone followed with its own key and a view's (BIND's views, one key each): a NOTIFY signed
    /// with either is believed, and answered signed with that key; one with a third key, or
    /// unsigned, is not; a view's own primary counts as the zone's.
    func testAViewsKeyIsBelievedToo() throws {
        let zoneKey = try DNSTSIGKey(commandLine: "hmac-sha256:zone:" + Data(repeating: 1, count: 32).base64EncodedString())
        let viewKey = try DNSTSIGKey(commandLine: "hmac-sha256:view:" + Data(repeating: 2, count: 32).base64EncodedString())
        let stranger = try DNSTSIGKey(commandLine: "hmac-sha256:view:" + Data(repeating: 3, count: 32).base64EncodedString())
        let viewPrimary = HTTPDNSIPAddress("192.0.2.54")!
        var view = HTTPDNSSecondary.Configuration(
            zone: try DNSName("example.test"), primaries: [SocketAddress(address: viewPrimary, port: 53)], key: viewKey)
        view.view = "carrier-a"
        let policy = HTTPDNSNotifyPolicy(zones: [
            HTTPDNSSecondary.Configuration(zone: try DNSName("example.test"), primaries: [SocketAddress(address: primary, port: 53)], key: zoneKey),
            view,
        ])
        let now: UInt64 = 1_800_000_000
        for (key, source) in [(zoneKey, primary), (viewKey, viewPrimary)] {
            let signed = try DNSTSIG.sign(try DNSNotify.request(zone: DNSName("example.test"), id: 11), key: key, now: now)
            let outcome = policy.handle(signed.bytes, from: source, now: now)
            XCTAssertEqual(outcome.zone, try DNSName("example.test"), key.name.text())
            let answer = try DNSReceivedMessage(decoding: try XCTUnwrap(outcome.answer))
            XCTAssertNoThrow(try DNSTSIG.verify(answer, key: key, requestMAC: signed.mac, now: now), key.name.text())
        }
        let forged = try DNSTSIG.sign(try DNSNotify.request(zone: DNSName("example.test"), id: 12), key: stranger, now: now)
        XCTAssertEqual(rcode(policy.handle(forged.bytes, from: primary, now: now).answer), 9)
        XCTAssertEqual(rcode(policy.handle(try DNSNotify.request(zone: DNSName("example.test"), id: 13).encode(), from: primary, now: now).answer), 9)
        // The zone's key from the view's primary: only the view's transfer comes from there.
        let misplaced = try DNSTSIG.sign(try DNSNotify.request(zone: DNSName("example.test"), id: 14), key: zoneKey, now: now)
        XCTAssertNil(policy.handle(misplaced.bytes, from: viewPrimary, now: now).zone)
    }
}
