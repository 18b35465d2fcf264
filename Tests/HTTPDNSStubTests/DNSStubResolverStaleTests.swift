import DNSStubCore
import DNSWire
import Foundation
import HTTPDNS
import HTTPDNSCore
@testable import HTTPDNSStub
import HTTPDNSTestSupport
import XCTest

/// The resolver's serve-stale path without sockets (RFC 8767 §5): a scripted upstream that fails or
/// answers, and an expired entry loaded as from a cache file written two minutes ago.
final class DNSStubResolverStaleTests: XCTestCase {
    /// An upstream that answers MX (TTL 300) or throws `.timedOut` at once, recording each call's timeout.
    final class ScriptedUpstream: DNSStubUpstream {
        let name = "scripted"
        let state = HTTPDNSLock((fails: true, timeouts: [Duration]()))

        func exchange(_ query: DNSMessage, timeout: Duration) async throws -> DNSMessage {
            let fails = state.withLock { state in
                state.timeouts.append(timeout)
                return state.fails
            }
            if fails { throw HTTPDNSError(.timedOut, "scripted") }
            var reply = DNSMessage(id: query.id, flags: 0x8180, questions: query.questions)
            reply.answers = [DNSRecord(name: query.questions[0].name, ttl: 300, data: .mx(preference: 10, exchange: try DNSName("mx2.example.test")))]
            return reply
        }

        var calls: Int { state.withLock { $0.timeouts.count } }
    }

    let upstream = ScriptedUpstream()
    var resolver: DNSStubResolver!

    override func setUpWithError() throws {
        var engineConfiguration = HTTPDNSConfiguration(resolvers: [])
        engineConfiguration.protectedHosts = HTTPDNSHostPolicy(["none.invalid"])
        resolver = DNSStubResolver(engine: HTTPDNSEngine(configuration: engineConfiguration), upstreams: [upstream])
    }

    func request(_ name: String) throws -> DNSStubRequest {
        DNSStubRequest(id: 7, question: DNSQuestion(name: try DNSName(name), type: .MX), edns: .init())
    }

    /// mail.example.test MX, TTL 60, stored 120 s ago (wall clock): expired, within the stale window.
    func loadExpiredEntry() throws {
        var old = DNSStubCache()
        let response = DNSStubResponse(answers: [
            DNSRecord(name: try DNSName("mail.example.test"), ttl: 60, data: .mx(preference: 10, exchange: try DNSName("mx1.example.test"))),
        ])
        old.store(response, for: try request("mail.example.test"), now: 0)
        let wall = Date().timeIntervalSince1970
        let bytes = DNSStubCacheFile.encode(old, now: 0, wallClock: wall - 120, key: nil)
        let now = resolver.now
        let loaded = try resolver.cache.withLock { cache throws(DNSStubCacheFile.Rejection) in
            try DNSStubCacheFile.load(bytes, key: nil, into: &cache, now: now, wallClock: wall)
        }
        XCTAssertEqual(loaded, 1)
    }

    func testStaleAtOnceWhileDownThenOneBackgroundRefreshBringsTheUpstreamBack() async throws {
        try loadExpiredEntry()
        let query = try request("mail.example.test")
        // Not known down: the upstream is tried, for at most the client response timer.
        let first = await resolver.answer(query)
        XCTAssertEqual(first.extendedError?.infoCode, .staleAnswer)
        XCTAssertEqual(upstream.state.withLock { $0.timeouts }, [.milliseconds(1800)], "RFC 8767 client response timer")
        XCTAssertTrue(resolver.health.withLock { $0.isDown(now: resolver.now) }, "every upstream failed: down")
        // Down: the stale answer at once, the refresh in the background (full timeout).
        let second = await resolver.answer(query)
        XCTAssertEqual(second.extendedError?.infoCode, .staleAnswer)
        let refreshed = await pollUntil { upstream.calls == 2 }
        XCTAssertTrue(refreshed, "one background refresh")
        XCTAssertEqual(upstream.state.withLock { $0.timeouts.last }, .seconds(5))
        // The upstream recovers: the next background refresh stores a fresh answer and ends the down state.
        upstream.state.withLock { $0.fails = false }
        let third = await resolver.answer(query)
        XCTAssertEqual(third.extendedError?.infoCode, .staleAnswer, "still down when asked: stale at once")
        let back = await pollUntil { !resolver.health.withLock { $0.isDown(now: resolver.now) } }
        XCTAssertTrue(back, "an answer ends the down state")
        let fresh = await resolver.answer(query)
        XCTAssertNil(fresh.extendedError)
        XCTAssertEqual(fresh.answers.map(\.data), [.mx(preference: 10, exchange: try DNSName("mx2.example.test"))])
        XCTAssertEqual(upstream.calls, 3, "the fresh answer came from the cache")
    }

    func testWithoutAStaleAnswerTheUpstreamsAreAskedEvenWhenDown() async throws {
        _ = await resolver.answer(try request("a.example.test"))
        XCTAssertTrue(resolver.health.withLock { $0.isDown(now: resolver.now) })
        let answer = await resolver.answer(try request("b.example.test"))
        XCTAssertEqual(answer.rcode, .serverFailure)
        XCTAssertEqual(answer.extendedError?.infoCode, .noReachableAuthority)
        XCTAssertEqual(upstream.state.withLock { $0.timeouts }, [.seconds(5), .seconds(5)], "asked with the full timeout both times")
    }
}
