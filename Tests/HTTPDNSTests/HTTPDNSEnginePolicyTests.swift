import HTTPDNS
import HTTPDNSCore
import XCTest

/// The policy that used to be re-derived by the command line, now the engine's: static entries
/// first, unprotected names from LocalDNS alone, answers labelled by the kind of resolver, and every
/// request sent upstream counted (pre-resolution included).
final class HTTPDNSEnginePolicyTests: XCTestCase {
    func testStaticEntriesComeFirstAreNotCachedAndArePinned() async throws {
        let provider = FakeResolver("p", .answer(["198.51.100.1"], ttl: 60))
        let subject = engine([provider]) {
            $0.staticEntries = ["Pinned.Example": [HTTPDNSIPAddress("127.0.0.9")!, HTTPDNSIPAddress("::9")!]]
            $0.protectedHosts = HTTPDNSHostPolicy(["api.example"])
        }
        let answer = try await subject.resolve("pinned.example")
        XCTAssertEqual(answer.addresses, [HTTPDNSIPAddress("127.0.0.9")!])
        XCTAssertEqual(answer.origin, .static)
        XCTAssertEqual(provider.calls, 0)
        XCTAssertNil(subject.cachedAnswer("pinned.example"))
        XCTAssertTrue(subject.protects("pinned.example"), "a static entry is always used, even outside the protected list")
        let both = try await subject.resolve("pinned.example", family: .both)
        XCTAssertEqual(both.addresses.count, 2)
    }

    func testUnprotectedNamesGoToLocalDNSAlone() async throws {
        let provider = FakeResolver("p", .answer(["198.51.100.1"], ttl: 60))
        let local = FakeResolver("local", .answer(["203.0.113.7"], ttl: 30))
        let subject = engine([provider], local: local) { $0.protectedHosts = HTTPDNSHostPolicy(["*.protected.example"]) }
        let outside = try await subject.resolve("www.other.example")
        XCTAssertEqual(outside.addresses, [HTTPDNSIPAddress("203.0.113.7")!])
        XCTAssertEqual(outside.origin, .localDNS)
        XCTAssertEqual(provider.calls, 0)
        let inside = try await subject.resolve("a.protected.example")
        XCTAssertEqual(inside.origin, .httpdns)
        XCTAssertEqual(provider.calls, 1)
    }

    func testAnswersAreLabelledByTheKindOfResolver() async throws {
        let table = [HTTPDNSIPAddress("198.51.100.4")!]
        let fromStatic = try await engine([HTTPDNSStaticResolver(["s.example": table])]).resolve("s.example")
        XCTAssertEqual(fromStatic.origin, .static)
        let fromService = try await engine([FakeResolver("p", .answer(["198.51.100.4"], ttl: 60))]).resolve("s.example")
        XCTAssertEqual(fromService.origin, .httpdns)
        XCTAssertEqual(HTTPDNSUDPResolver(server: HTTPDNSIPAddress("127.0.0.1")!, port: 53).origin, .dns)
        XCTAssertEqual(HTTPDNSSystemResolver().origin, .localDNS)
    }

    func testPreResolutionIsCountedAsUpstreamLookups() async throws {
        let provider = FakeResolver("p", .answer(["198.51.100.1"], ttl: 60))
        let subject = engine([provider])
        await subject.preResolve(["a.example", "b.example"])
        XCTAssertNotNil(subject.cachedAnswer("a.example"))
        XCTAssertNotNil(subject.cachedAnswer("b.example"))
        // One batch request for both names (this fake serves a batch by answering name by name).
        XCTAssertEqual(subject.upstreamLookupCount, 1)
    }
}
