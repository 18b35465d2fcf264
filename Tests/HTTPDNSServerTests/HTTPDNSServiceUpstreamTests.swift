import DNSWire
import Foundation
import HTTPDNS
import HTTPDNSCore
import HTTPDNSServer
import Synchronization
import XCTest

/// Names the zone lacks go upstream through an engine: another service over DoH, or a static table.
final class HTTPDNSServiceUpstreamTests: HTTPDNSServiceTestCase {
    /// Counts lookups, to see the engine's cache at work.
    final class CountingResolver: HTTPDNSResolver {
        let name = "counting"
        let inner: HTTPDNSStaticResolver
        let calls = Atomic<Int>(0)

        init(_ inner: HTTPDNSStaticResolver) { self.inner = inner }

        func resolve(_ host: String, family: HTTPDNSAddressFamily) async throws -> HTTPDNSRecordSet {
            calls.add(1, ordering: .relaxed)
            return try await inner.resolve(host, family: family)
        }
    }

    func testNamesMissingFromTheZoneComeFromAnotherServiceOverDoH() async throws {
        let back = try startService()
        let front = try startService { configuration in
            configuration.zone = try! HTTPDNSZone(json: Data(#"{"front.test": {"A": ["192.0.2.77"]}}"#.utf8))
            configuration.upstream.resolvers = [try! self.resolver("doh=" + self.base(back) + "/dns-query")]
            configuration.upstream.hygiene = HTTPDNSAnswerHygiene(allowPrivate: true)
        }
        let client = try resolver("dnspod=" + base(front))
        let own = try await client.resolve("front.test", family: .ipv4)
        XCTAssertEqual(own.ipv4, ips(["192.0.2.77"]))
        let forwarded = try await client.resolve("www.example.test", family: .both)
        XCTAssertEqual(forwarded.ipv4, ips(["192.0.2.1", "192.0.2.2"]))
        XCTAssertEqual(forwarded.ipv6, ips(["2001:db8::1"]))

        let doh = try resolver("doh=" + base(front) + "/dns-query")
        await assertResolveFails(doh, "nowhere.example.test", code: .nameNotFound)
        await assertResolveFails(doh, "v4only.example.test", family: .ipv6, code: .noAddress)
        // Upstream answers are not authoritative.
        let message = DNSMessage.query(name: try DNSName("www.example.test"), type: .A)
        let response = try await fetch(base(front) + "/dns-query?dns=" + DoHWireFormat.base64URL(message))
        let decoded = try DNSMessage(decoding: [UInt8](response.body))
        XCTAssertFalse(decoded.isAuthoritative)
        XCTAssertEqual(decoded.answers.count, 2)
    }

    func testUpstreamAnswersAreCachedAndBogonsDropped() async throws {
        let counting = CountingResolver(HTTPDNSStaticResolver(
            ["cached.test": ips(["203.0.113.5"]), "bogon.test": ips(["10.0.0.1"])], ttl: 300))
        let front = try startService { configuration in
            configuration.upstream.resolvers = [counting]
        }
        let client = try resolver("ips=" + base(front) + "/ips")
        for _ in 0..<3 {
            let answer = try await client.resolve("cached.test", family: .both)
            XCTAssertEqual(answer.ipv4, ips(["203.0.113.5"]))
        }
        XCTAssertEqual(counting.calls.load(ordering: .relaxed), 1)
        // Private space is dropped by the default hygiene: the front reports a failure, not the bogon.
        let bogon = try await fetch(base(front) + "/ips?host=bogon.test")
        XCTAssertEqual(bogon.statusCode, 502)
        XCTAssertFalse(text(bogon).contains("10.0.0.1"))
        let missing = try await fetch(base(front) + "/d?dn=missing.test")
        XCTAssertEqual(text(missing), "0")
    }

    func testUnreachableUpstreamIsSERVFAILAnd502() async throws {
        let dead = try startService()
        let deadURL = base(dead)
        dead.stop()
        let front = try startService { configuration in
            configuration.upstream.resolvers = [try! self.resolver("doh=\(deadURL)/dns-query")]
            configuration.upstream.timeouts.perAttempt = .seconds(2)
        }
        let message = DNSMessage.query(name: try DNSName("elsewhere.test"), type: .A)
        let response = try await fetch(base(front) + "/dns-query?dns=" + DoHWireFormat.base64URL(message))
        XCTAssertEqual(response.statusCode, 200)
        XCTAssertEqual(try DNSMessage(decoding: [UInt8](response.body)).rcode, .serverFailure)
        XCTAssertEqual(response.header("cache-control"), "max-age=0")
        let text = try await fetch(base(front) + "/d?dn=elsewhere.test")
        XCTAssertEqual(text.statusCode, 502)
        let zoneStillWorks = try await fetch(base(front) + "/d?dn=www.example.test")
        XCTAssertEqual(self.text(zoneStillWorks), "192.0.2.1;192.0.2.2")
    }
}
