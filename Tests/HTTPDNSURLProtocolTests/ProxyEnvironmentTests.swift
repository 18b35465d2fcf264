import Foundation
import HTTPDNSNetworking
import XCTest

/// The proxy variables read as libcurl 7.88 reads them (`lib/url.c`, `lib/noproxy.c`).
final class ProxyEnvironmentTests: XCTestCase {
    private let http = URL(string: "http://api.example.com/")!
    private let https = URL(string: "https://api.example.com/")!

    func testProxyVariablePerScheme() {
        let environment = ProxyEnvironment(["http_proxy": "http://h:1", "https_proxy": "http://s:2"])
        XCTAssertEqual(environment.proxy(for: http), "http://h:1")
        XCTAssertEqual(environment.proxy(for: https), "http://s:2")
        XCTAssertEqual(ProxyEnvironment(["HTTPS_PROXY": "http://S:2"]).proxy(for: https), "http://S:2")
        XCTAssertNil(ProxyEnvironment([:]).proxy(for: http))
    }

    func testUpperCaseHTTPProxyIsIgnoredAsLibcurlDoes() {
        // A CGI request's `Proxy:` header becomes HTTP_PROXY: libcurl reads only the lower-case name.
        let environment = ProxyEnvironment(["HTTP_PROXY": "http://evil:1"])
        XCTAssertNil(environment.proxy(for: http))
        XCTAssertNil(environment.proxy(for: https))
    }

    func testAllProxyIsTheFallback() {
        let environment = ProxyEnvironment(["ALL_PROXY": "socks5://a:1", "http_proxy": "http://h:1"])
        XCTAssertEqual(environment.proxy(for: http), "http://h:1")
        XCTAssertEqual(environment.proxy(for: https), "socks5://a:1")
        XCTAssertEqual(ProxyEnvironment(["all_proxy": "http://l:1", "ALL_PROXY": "http://u:1"]).proxy(for: https), "http://l:1")
    }

    func testNoProxyNamesMatchThemselvesAndSubdomains() {
        let environment = ProxyEnvironment(["http_proxy": "http://h:1", "NO_PROXY": " .Example.COM,other.test "])
        for host in ["example.com", "api.example.com", "EXAMPLE.com.", "other.test", "a.other.test"] {
            XCTAssertTrue(environment.bypasses(host), host)
        }
        for host in ["badexample.com", "example.org", "test"] {
            XCTAssertFalse(environment.bypasses(host), host)
        }
        XCTAssertNil(environment.proxy(for: http))
        XCTAssertEqual(environment.proxy(for: URL(string: "http://example.org/")!), "http://h:1")
    }

    func testNoProxyStarAndAddresses() {
        XCTAssertTrue(ProxyEnvironment(["no_proxy": "*"]).bypasses("anything.example"))
        let environment = ProxyEnvironment(["no_proxy": "10.0.0.0/8 192.168.1.7,[::1],fd00::/8"])
        XCTAssertTrue(environment.bypasses("10.20.30.40"))
        XCTAssertTrue(environment.bypasses("192.168.1.7"))
        XCTAssertFalse(environment.bypasses("192.168.1.8"))
        XCTAssertTrue(environment.bypasses("[::1]"))
        XCTAssertTrue(environment.bypasses("fd12::1"))
        XCTAssertFalse(environment.bypasses("11.0.0.1"))
        XCTAssertFalse(environment.bypasses("10.example"), "an address pattern never matches a name")
    }

    func testRedactedDropsCredentials() {
        XCTAssertEqual(ProxyEnvironment.redacted("http://user:p@ss@proxy:8080"), "http://proxy:8080")
        XCTAssertEqual(ProxyEnvironment.redacted("proxy:8080"), "proxy:8080")
        XCTAssertEqual(ProxyEnvironment.redacted("user@proxy:8080"), "proxy:8080")
    }
}
