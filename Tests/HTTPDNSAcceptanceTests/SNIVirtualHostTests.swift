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

/// Acceptance 1: two HTTPS virtual hosts on one IP and port, told apart only by SNI, reached
/// through `URLSession` while LocalDNS (a real, lying dnsmasq) points both names at an ad server.
final class SNIVirtualHostTests: XCTestCase {
    func testTwoHTTPSVirtualHostsOnOneAddressAreReachedDespiteLyingDNS() async throws {
        let certificates = try Bed.certificates()
        defer { certificates.remove() }
        let nginx = try Nginx(.init(virtualHosts: [
            // The default server of the origin's port presents a certificate for neither name: a
            // client that sent no SNI (or the wrong one) fails verification instead of passing.
            .init(["_"], tls: try certificates.issue(dnsNames: ["default.test"]), address: Bed.origin, locations: [.text("/", "default server\n")]),
            .init(["alpha.test"], tls: try certificates.issue(dnsNames: ["alpha.test"]), address: Bed.origin, locations: [
                .text("/", "vhost alpha.test at $server_addr\n", headers: [Bed.header("X-Vhost", "alpha.test")]),
            ]),
            .init(["beta.test"], tls: try certificates.issue(dnsNames: ["beta.test"]), address: Bed.origin, locations: [
                .text("/", "vhost beta.test at $server_addr\n", headers: [Bed.header("X-Vhost", "beta.test")]),
            ]),
            .init(["alpha.test"], address: Bed.origin, locations: [.text("/", "vhost alpha.test (http)\n")]),
            // The hijacker: takes every name on its address; its certificate (from the same CA, so
            // only the name is wrong) is for its own ad domain.
            .init(["_"], tls: try certificates.issue(dnsNames: ["ads.test"]), address: Bed.hijack, locations: [.text("/", "AD PAGE\n")]),
            .init(["_"], address: Bed.hijack, locations: [.text("/", "AD PAGE\n")]),
        ]))
        defer { nginx.stop() }
        let https = try XCTUnwrap(nginx.httpsPort)
        let http = try XCTUnwrap(nginx.httpPort)

        let service = try Bed.httpdnsService(["alpha.test": [Bed.origin], "beta.test": [Bed.origin]])
        defer { service.stop() }
        let dnsmasq = try Bed.lyingDNS(["alpha.test": Bed.hijack, "beta.test": Bed.hijack])
        defer { dnsmasq.stop() }
        let engine = try Bed.engine(providers: [Bed.dnspod(service)], localDNS: dnsmasq, trusting: certificates)
        let client = Bed.client(engine)
        let session = try Bed.session(client)

        for name in ["alpha.test", "beta.test"] {
            let url = URL(string: "https://\(name):\(https)/")!
            let (data, response) = try await session.data(from: url)
            let httpResponse = try XCTUnwrap(response as? HTTPURLResponse)
            XCTAssertEqual(httpResponse.statusCode, 200)
            XCTAssertEqual(httpResponse.url, url, "the response belongs to the URL, not the IP")
            XCTAssertEqual(httpResponse.value(forHTTPHeaderField: "X-Vhost"), name)
            XCTAssertEqual(String(decoding: data, as: UTF8.self), "vhost \(name) at \(Bed.origin)\n")
        }
        let served = await nginx.accessLog(atLeast: 2)
        XCTAssertEqual(served.map(\.sni), ["alpha.test", "beta.test"], "each request carried its own name in SNI")
        XCTAssertEqual(Set(served.map(\.serverAddress)), [Bed.origin.description])
        XCTAssertEqual(served.map(\.serverName), ["alpha.test", "beta.test"])

        // The control: what LocalDNS says, and where a request following it lands.
        let lied = try await engine.resolveLocally("alpha.test")
        XCTAssertEqual(lied.addresses, [Bed.hijack], "dnsmasq lies")
        let truth = try await engine.resolve("alpha.test")
        XCTAssertEqual(truth.addresses, [Bed.origin])
        XCTAssertNotEqual(truth.origin, .localDNS)

        let naive = try Bed.engine(providers: [], localDNS: dnsmasq, trusting: certificates)
        let naiveClient = Bed.client(naive)
        let (ad, _) = try await naiveClient.data(for: URLRequest(url: URL(string: "http://alpha.test:\(http)/")!))
        XCTAssertEqual(String(decoding: ad, as: UTF8.self), "AD PAGE\n", "plain HTTP following LocalDNS gets the ad page")
        do {
            _ = try await naiveClient.data(for: URLRequest(url: URL(string: "https://beta.test:\(https)/")!))
            XCTFail("HTTPS following LocalDNS reached the hijacker and accepted its certificate")
        } catch let error as URLError {
            XCTAssertEqual(error.code, .serverCertificateUntrusted)
        }

        // The same plain-HTTP URL through HTTPDNS reaches the origin.
        let (real, _) = try await client.data(for: URLRequest(url: URL(string: "http://alpha.test:\(http)/")!))
        XCTAssertEqual(String(decoding: real, as: UTF8.self), "vhost alpha.test (http)\n")
        XCTAssertEqual(nginx.accessLog.filter { $0.serverAddress == Bed.hijack.description }.map(\.uri), ["/"],
                       "only the naive plain request reached the hijacker")
    }

    func testRequestWithoutProtectionIsLeftToURLSession() throws {
        let certificates = try Bed.certificates()
        defer { certificates.remove() }
        let engine = try Bed.engine(providers: [], localDNS: nil, trusting: certificates)
        let client = Bed.client(engine)
        // The installation lives as long as its configuration (sessions hold it): keep it for the checks.
        let configuration = URLSessionConfiguration.ephemeral
        try HTTPDNSURLProtocol.install(client, into: configuration)
        withExtendedLifetime(configuration) {
            XCTAssertTrue(HTTPDNSURLProtocol.canInit(with: URLRequest(url: URL(string: "https://alpha.test/")!)))
            XCTAssertFalse(HTTPDNSURLProtocol.canInit(with: URLRequest(url: URL(string: "https://example.org/")!)))
        }
    }
}
