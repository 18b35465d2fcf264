import DNSStubCore
import DNSWire
import HTTPDNS
import HTTPDNSCore
@testable import HTTPDNSStub
import XCTest

/// The resolver reads one injected clock (issue 31): a test ages its cache by moving a manual clock,
/// without sleeping.
final class DNSStubResolverClockTests: XCTestCase {
    /// Answers A with TTL 60, counting calls.
    final class CountingUpstream: DNSStubUpstream {
        let name = "counting"
        let calls = HTTPDNSLock(0)

        func exchange(_ query: DNSMessage, timeout: Duration) async throws -> DNSMessage {
            calls.withLock { $0 += 1 }
            var reply = DNSMessage(id: query.id, flags: 0x8180, questions: query.questions)
            reply.answers = [DNSRecord(name: query.questions[0].name, ttl: 60, data: .a([192, 0, 2, 9]))]
            return reply
        }
    }

    func testACachedAnswerAgesWithTheInjectedClockAndExpiresOnIt() async throws {
        var engineConfiguration = HTTPDNSConfiguration(resolvers: [])
        engineConfiguration.protectedHosts = HTTPDNSHostPolicy(["none.invalid"])
        let upstream = CountingUpstream()
        let clock = HTTPDNSManualClock(start: 1_000)
        let resolver = DNSStubResolver(engine: HTTPDNSEngine(configuration: engineConfiguration), upstreams: [upstream], clock: clock)
        XCTAssertEqual(resolver.now, 1_000)
        let request = DNSStubRequest(id: 1, question: DNSQuestion(name: try DNSName("www.example.test"), type: .A), edns: .init())

        _ = await resolver.answer(request)
        XCTAssertEqual(upstream.calls.withLock { $0 }, 1)
        clock.advance(by: .seconds(45))
        let cached = await resolver.answer(request)
        XCTAssertEqual(upstream.calls.withLock { $0 }, 1, "fresh at 45 s: from the cache")
        XCTAssertEqual(cached.answers.first?.ttl, 15, "the TTL counted down on the injected clock")
        clock.advance(by: .seconds(20))
        _ = await resolver.answer(request)
        XCTAssertEqual(upstream.calls.withLock { $0 }, 2, "expired at 65 s: asked again")
    }
}
