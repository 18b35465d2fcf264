import Foundation
import HTTPDNS
import HTTPDNSCore
import HTTPDNSTestSupport
import HTTPDNSNetworking
import HTTPDNSURLSession
import XCTest
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Acceptance 4: cookies from nginx come back on the next request; a 302 after a POST becomes a
/// GET on the re-resolved new host (another virtual host on another IP); a 307 keeps the body.
final class CookieRedirectTests: XCTestCase {
    func testCookiesSetByNginxComeBackOnTheNextRequest() async throws {
        let certificates = try Bed.certificates()
        defer { certificates.remove() }
        let nginx = try Nginx(.init(virtualHosts: [
            .init(["cookie.test"], tls: try certificates.issue(dnsNames: ["cookie.test"]), address: Bed.origin, locations: [
                .text("/login", "welcome\n", headers: [Bed.header("Set-Cookie", "session=abc123; Path=/; Secure; HttpOnly")]),
                .text("/", "cookie=[$http_cookie]\n"),
            ]),
            .init(["other.test"], tls: try certificates.issue(dnsNames: ["other.test"]), address: Bed.origin, locations: [
                .text("/", "cookie=[$http_cookie]\n"),
            ]),
        ]))
        defer { nginx.stop() }
        let port = try XCTUnwrap(nginx.httpsPort)
        let service = try Bed.httpdnsService(["cookie.test": [Bed.origin], "other.test": [Bed.origin]])
        defer { service.stop() }
        let engine = try Bed.engine(providers: [Bed.dnspod(service)], localDNS: nil, trusting: certificates)
        let configuration = URLSessionConfiguration.ephemeral
        try configuration.httpdnsInstall(Bed.client(engine))
        let session = URLSession(configuration: configuration)

        let (before, _) = try await session.data(from: URL(string: "https://cookie.test:\(port)/profile")!)
        XCTAssertEqual(String(decoding: before, as: UTF8.self), "cookie=[]\n")
        _ = try await session.data(from: URL(string: "https://cookie.test:\(port)/login")!)
        let stored = configuration.httpCookieStorage?.cookies(for: URL(string: "https://cookie.test/")!) ?? []
        XCTAssertEqual(stored.map(\.name), ["session"], "stored under the real host, not the IP")
        let (after, _) = try await session.data(from: URL(string: "https://cookie.test:\(port)/profile")!)
        XCTAssertEqual(String(decoding: after, as: UTF8.self), "cookie=[session=abc123]\n")
        let (elsewhere, _) = try await session.data(from: URL(string: "https://other.test:\(port)/")!)
        XCTAssertEqual(String(decoding: elsewhere, as: UTF8.self), "cookie=[]\n", "the cookie stays with its host")
    }

    func testRedirectsAfterPostAreFollowedOnTheReResolvedHost() async throws {
        let certificates = try Bed.certificates()
        defer { certificates.remove() }
        let echo = try TestHTTPServer(address: Bed.services.description)
        defer { echo.stop() }
        // The port is known only once nginx runs; `$server_port` keeps the redirect on it.
        let nginx = try Nginx(.init(virtualHosts: [
            .init(["start.test"], tls: try certificates.issue(dnsNames: ["start.test"]), address: Bed.origin, locations: [
                .redirect("/302", to: "https://moved.test:$server_port/landing?from=302", status: 302),
                .redirect("/307", to: "https://moved.test:$server_port/landing?from=307", status: 307),
            ]),
            .init(["moved.test"], tls: try certificates.issue(dnsNames: ["moved.test"]), address: Bed.second, locations: [
                .proxy("/", to: "http://\(Bed.services):\(echo.port)", headers: [
                    Bed.header("X-Vhost", "moved.test"), Bed.header("X-Server-Addr", "$server_addr"),
                ]),
            ]),
        ]))
        defer { nginx.stop() }
        let port = try XCTUnwrap(nginx.httpsPort)
        let service = try Bed.httpdnsService(["start.test": [Bed.origin], "moved.test": [Bed.second]])
        defer { service.stop() }
        // LocalDNS lies about the redirect target: following it would reach the hijacker.
        let dnsmasq = try Bed.lyingDNS(["moved.test": Bed.hijack, "start.test": Bed.hijack])
        defer { dnsmasq.stop() }
        let engine = try Bed.engine(providers: [Bed.dnspod(service)], localDNS: dnsmasq, trusting: certificates)
        let session = try Bed.session(Bed.client(engine))

        var post = URLRequest(url: URL(string: "https://start.test:\(port)/302")!)
        post.httpMethod = "POST"
        post.httpBody = Data("form=1".utf8)
        post.setValue("application/x-www-form-urlencoded", forHTTPHeaderField: "Content-Type")
        let (body, response) = try await session.data(for: post)
        let http = try XCTUnwrap(response as? HTTPURLResponse)
        XCTAssertEqual(http.statusCode, 200)
        XCTAssertEqual(http.url?.host, "moved.test")
        XCTAssertEqual(http.value(forHTTPHeaderField: "X-Vhost"), "moved.test")
        XCTAssertEqual(http.value(forHTTPHeaderField: "X-Server-Addr"), Bed.second.description, "a different IP")
        XCTAssertEqual(http.value(forHTTPHeaderField: "X-Echo-Method"), "GET")
        // The echo server repeats Host as X-Echo-Host (twice: its own field and the header echo).
        XCTAssertEqual(Set(http.value(forHTTPHeaderField: "X-Echo-Host")?.components(separatedBy: ", ") ?? []), ["moved.test:\(port)"])
        XCTAssertEqual(http.value(forHTTPHeaderField: "X-Echo-Query"), "from=302")
        XCTAssertNil(http.value(forHTTPHeaderField: "X-Echo-Content-Type"), "no body headers on the GET")
        XCTAssertEqual(body.count, 0, "the body is dropped")

        var keep = URLRequest(url: URL(string: "https://start.test:\(port)/307")!)
        keep.httpMethod = "POST"
        keep.httpBody = Data("form=2&keep=yes".utf8)
        let (kept, keptResponse) = try await session.data(for: keep)
        let keptHTTP = try XCTUnwrap(keptResponse as? HTTPURLResponse)
        XCTAssertEqual(keptHTTP.value(forHTTPHeaderField: "X-Echo-Method"), "POST")
        XCTAssertEqual(keptHTTP.value(forHTTPHeaderField: "X-Server-Addr"), Bed.second.description)
        XCTAssertEqual(String(decoding: kept, as: UTF8.self), "form=2&keep=yes")

        let hops = await nginx.accessLog(atLeast: 4).map { "\($0.method) \($0.sni) \($0.serverAddress) \($0.status)" }
        XCTAssertEqual(hops, [
            "POST start.test \(Bed.origin) 302", "GET moved.test \(Bed.second) 200",
            "POST start.test \(Bed.origin) 307", "POST moved.test \(Bed.second) 200",
        ])
    }
}
