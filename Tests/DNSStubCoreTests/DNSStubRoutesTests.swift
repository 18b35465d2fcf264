import DNSStubCore
import HTTPDNSCore
import XCTest

/// `--route` matching: --protect's patterns and exclusions, the most specific route, upstream lists.
final class DNSStubRoutesTests: XCTestCase {
    func testWildcardExactAndExclusion() throws {
        let routes = try DNSStubRoutes(parsing: ["*.corp.example,!www.corp.example=udp=10.0.0.1:53"])
        XCTAssertEqual(routes.route(for: "git.corp.example"), 0)
        XCTAssertEqual(routes.route(for: "a.b.corp.example."), 0, "any depth, absolute form")
        XCTAssertEqual(routes.route(for: "GIT.Corp.Example"), 0, "case-insensitive")
        XCTAssertNil(routes.route(for: "www.corp.example"), "excluded: the default path")
        XCTAssertNil(routes.route(for: "corp.example"), "a wildcard does not cover its own apex")
        XCTAssertNil(routes.route(for: "notcorp.example"))
        XCTAssertEqual(routes.routes[0].upstreams, ["udp=10.0.0.1:53"])
    }

    func testLongestSuffixWinsAndExactBeatsWildcards() throws {
        let routes = try DNSStubRoutes(parsing: [
            "*=doh=https://all.example/dns-query",
            "*.example=udp=10.0.0.1:53",
            "*.lab.example=udp=10.0.0.2:53",
            "host.lab.example=udp=10.0.0.3:53",
        ])
        XCTAssertEqual(routes.route(for: "www.other.test"), 0)
        XCTAssertEqual(routes.route(for: "www.example"), 1)
        XCTAssertEqual(routes.route(for: "a.lab.example"), 2)
        XCTAssertEqual(routes.route(for: "host.lab.example"), 3)
        // Given in the other order: the same answers.
        let reversed = try DNSStubRoutes(parsing: [
            "host.lab.example=udp=10.0.0.3:53", "*.lab.example=udp=10.0.0.2:53", "*.example=udp=10.0.0.1:53",
        ])
        XCTAssertEqual(reversed.route(for: "a.lab.example"), 1)
        XCTAssertEqual(reversed.route(for: "host.lab.example"), 0)
        XCTAssertEqual(reversed.route(for: "b.example"), 2)
    }

    func testSamePatternsGatherUpstreams() throws {
        let routes = try DNSStubRoutes(parsing: ["*.corp.example=udp=10.0.0.1:53", "*.corp.example=udp=10.0.0.2:53"])
        XCTAssertEqual(routes.routes.count, 1)
        XCTAssertEqual(routes.routes[0].upstreams, ["udp=10.0.0.1:53", "udp=10.0.0.2:53"])
    }

    func testBadRoutes() {
        for text in ["*.corp.example", "*.corp.example=", "!*.corp.example=udp=10.0.0.1:53", "=udp=10.0.0.1:53"] {
            XCTAssertThrowsError(try DNSStubRoutes(parsing: [text]), text) { error in
                XCTAssertEqual((error as? HTTPDNSError)?.code, .invalidConfiguration, text)
            }
        }
        XCTAssertTrue(DNSStubRoutes().isEmpty)
        XCTAssertNil(DNSStubRoutes().route(for: "www.example.com"))
    }
}
