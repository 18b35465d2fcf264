import DNSWire
import Foundation
import HTTPDNS
import HTTPDNSCore
@testable import HTTPDNSServer
import XCTest

/// Encoded wire answers kept per zone: a repeated query is answered from them under its own ID,
/// with the same metrics, never across a reload and never for what came from upstream.
final class HTTPDNSWireAnswerCacheTests: HTTPDNSServiceTestCase {
    private func query(_ name: String, _ type: DNSRecordType = .A, id: UInt16) throws -> [UInt8] {
        DNSMessage.query(name: try DNSName(name), type: type, id: id, edns: nil)
    }

    private func get(_ service: HTTPDNSService, _ bytes: [UInt8]) async throws -> [UInt8] {
        let response = try await fetch(base(service) + "/dns-query?dns=" + DoHWireFormat.base64URL(bytes))
        XCTAssertEqual(response.statusCode, 200, text(response))
        return [UInt8](response.body)
    }

    func testARepeatedQueryGetsTheSameAnswerUnderItsOwnID() async throws {
        let service = try startService()
        let first = try await get(service, try query("www.example.test", id: 0x1111))
        XCTAssertEqual(service.keptWireAnswers, 1)
        let second = try await get(service, try query("www.example.test", id: 0x2222))
        XCTAssertEqual(Array(first.prefix(2)), [0x11, 0x11])
        XCTAssertEqual(Array(second.prefix(2)), [0x22, 0x22])
        XCTAssertEqual(first.dropFirst(2), second.dropFirst(2))
        XCTAssertEqual(try DNSMessage(decoding: second).answers.count, 2)
        // Another name, type or letter case is another query.
        _ = try await get(service, try query("www.example.test", .AAAA, id: 1))
        _ = try await get(service, try query("WWW.example.test", id: 1))
        _ = try await get(service, try query("nowhere.example.test", id: 1))
        XCTAssertEqual(service.keptWireAnswers, 4)
    }

    /// The kept answer is what a repeated query gets: one planted in the cache comes back.
    func testAKeptAnswerIsServedWithoutLookingUpAgain() throws {
        let service = HTTPDNSService(configuration: .init(zone: try makeZone()))
        let cache = HTTPDNSWireAnswerCache()
        let asked = try query("www.example.test", id: 0x0102)
        var planted = try query("planted.test", id: 0)
        planted[2] |= 0x80  // QR: a response
        let description = HTTPDNSServiceLookups.Description(
            name: "planted.test", type: "A", rcode: .noError, answers: 0, cacheOutcomes: [.zone], upstreamOutcomes: [],
            firstCacheOutcome: .zone)
        cache.store(planted, maxAge: 42, description: description, for: asked)
        let lookups = HTTPDNSServiceLookups(zone: try makeZone(), wireAnswers: cache)
        let response = service.answerWire(asked, lookups)
        guard case .data(let body) = response.body else { return XCTFail("a streamed answer") }
        XCTAssertEqual([UInt8](body), [0x01, 0x02] + planted.dropFirst(2))
        XCTAssertEqual(response.headers.first { $0.name == "Cache-Control" }?.value, "max-age=42")
        XCTAssertEqual(lookups.name, "planted.test")
        XCTAssertEqual(lookups.cacheOutcomes, [.zone])
    }

    func testAReloadedZoneIsAnsweredAtOnce() async throws {
        let service = try startService()
        let before = try DNSMessage(decoding: try await get(service, try query("www.example.test", id: 7)))
        XCTAssertEqual(before.answers.first?.data, .a([192, 0, 2, 1]))
        try service.reload(zone: try HTTPDNSZone(json: Data(#"{"www.example.test": {"A": ["198.51.100.8"], "ttl": 30}}"#.utf8)))
        XCTAssertEqual(service.keptWireAnswers, 0)
        let after = try DNSMessage(decoding: try await get(service, try query("www.example.test", id: 7)))
        XCTAssertEqual(after.answers.map(\.data), [.a([198, 51, 100, 8])])
        XCTAssertEqual(after.answers.first?.ttl, 30)
    }

    func testUpstreamAnswersAreNeverKept() async throws {
        let service = try startService { configuration in
            configuration.upstream.resolvers = [HTTPDNSStaticResolver(["far.test": self.ips(["203.0.113.5"])], ttl: 300)]
        }
        for id: UInt16 in [1, 2] {
            let answer = try DNSMessage(decoding: try await get(service, try query("far.test", id: id)))
            XCTAssertEqual(answer.answers.map(\.data), [.a([203, 0, 113, 5])])
            XCTAssertFalse(answer.isAuthoritative)
        }
        XCTAssertEqual(service.keptWireAnswers, 0)
    }

    func testKeptAnswersAreCountedLikeFreshOnes() async throws {
        let service = try startService()
        for id: UInt16 in [1, 2, 3] { _ = try await get(service, try query("www.example.test", id: id)) }
        for id: UInt16 in [4, 5] { _ = try await get(service, try query("nowhere.example.test", id: id)) }
        let metrics = try PrometheusText(text(try await fetch(base(service) + "/metrics")))
        XCTAssertEqual(metrics.value("httpdns_queries_total", ["endpoint": "doh-get"]), 5)
        XCTAssertEqual(metrics.value("httpdns_cache_total", ["outcome": "zone"]), 5)
        XCTAssertEqual(metrics.value("httpdns_dns_responses_total", ["rcode": "NOERROR"]), 3)
        XCTAssertEqual(metrics.value("httpdns_dns_responses_total", ["rcode": "NXDOMAIN"]), 2)
    }

    /// Found by fuzzing: a compression pointer into the header makes the ID part of the name, so two
    /// queries alike after their IDs can be a good query and a malformed one.
    func testAQueryThatReadsItsOwnIDIsAnsweredAfresh() async throws {
        let service = try startService()
        // One question: the label "(\u{7}!d", then a pointer to offset 0 (the ID and flags).
        let tail: [UInt8] = [0x01, 0x10, 0, 1, 0, 0, 0, 0, 0, 0, 4, 0x28, 0x07, 0x21, 0x64, 0xc0, 0x00, 0, 1, 0, 1]
        let readable = try await fetch(base(service) + "/dns-query?dns=" + DoHWireFormat.base64URL([0x01, 0x00] + tail))
        XCTAssertEqual(readable.statusCode, 200)
        let broken = try await fetch(base(service) + "/dns-query?dns=" + DoHWireFormat.base64URL([0xe4, 0x34] + tail))
        XCTAssertEqual(broken.statusCode, 400, text(broken))
        XCTAssertEqual(service.keptWireAnswers, 0)
    }

    func testOnlyQueriesThatReadTheSameWhateverTheirIDAreKept() throws {
        let plain = try query("www.example.test", id: 3)
        XCTAssertTrue(HTTPDNSWireAnswerCache.isSelfContained(plain))
        let padded = DNSMessage.query(
            name: try DNSName("www.example.test"), type: .AAAA, id: 0,
            edns: DNSEDNS(udpPayloadSize: 1232, options: [0, 12, 0, 40] + [UInt8](repeating: 0, count: 40)))  // padding
        XCTAssertTrue(HTTPDNSWireAnswerCache.isSelfContained(padded))
        XCTAssertFalse(HTTPDNSWireAnswerCache.isSelfContained(plain + [0]), "a byte after the message")
        XCTAssertFalse(HTTPDNSWireAnswerCache.isSelfContained(Array(plain.dropLast())), "cut short")
        var twoQuestions = plain
        twoQuestions[5] = 2
        XCTAssertFalse(HTTPDNSWireAnswerCache.isSelfContained(twoQuestions))
        // The name's first label replaced by a pointer to the header.
        XCTAssertFalse(HTTPDNSWireAnswerCache.isSelfContained(Array(plain[0..<12]) + [0xc0, 0x00, 0, 1, 0, 1]))
    }

    func testTheCacheStartsOverWhenFull() throws {
        let cache = HTTPDNSWireAnswerCache()
        let description = HTTPDNSServiceLookups.Description(
            name: nil, type: nil, rcode: .noError, answers: 0, cacheOutcomes: [], upstreamOutcomes: [], firstCacheOutcome: nil)
        var first: [UInt8] = []
        for index in 0...HTTPDNSWireAnswerCache.capacity {
            let asked = try query("n\(index).test", id: 9)
            if index == 0 { first = asked }
            cache.store(asked, maxAge: 1, description: description, for: asked)
            XCTAssertLessThanOrEqual(cache.count, HTTPDNSWireAnswerCache.capacity)
        }
        XCTAssertEqual(cache.count, 1)
        XCTAssertNil(cache.answer(to: first))
        XCTAssertNil(cache.answer(to: [1, 2, 3]), "shorter than a DNS header")
    }
}
