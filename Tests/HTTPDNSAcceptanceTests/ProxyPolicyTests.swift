import Foundation
import HTTPDNS
import HTTPDNSCore
import HTTPDNSTestSupport
import HTTPDNSTransport
import HTTPDNSNetworking
import XCTest
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Proxy awareness: with a proxy configured for a protected host, the client goes through it (the
/// default) or pins anyway, and the connection report says which; a proxy that fails is a
/// block signal. The proxy is a tiny loopback one that answers by itself.
final class ProxyPolicyTests: XCTestCase {
    private var proxy: LoopbackProxy!
    private var server: TestHTTPServer!

    override func setUpWithError() throws {
        proxy = try LoopbackProxy()
        server = try TestHTTPServer(address: Bed.second.description)
    }

    override func tearDown() {
        proxy?.stop()
        server?.stop()
    }

    func testProxyIsRespectedByDefaultAndResolvesTheHost() async throws {
        let engine = Self.engine()
        let client = client(engine, environment: ["http_proxy": "http://user:secret@127.0.0.1:\(proxy.port)"])
        let url = URL(string: "http://proxied.test:\(server.port)/path")!

        let response = try await client.send(URLRequest(url: url))
        XCTAssertEqual(String(decoding: response.body, as: UTF8.self), "proxied GET \(url.absoluteString) HTTP/1.1")
        XCTAssertEqual(response.connection.proxy, .used("http://127.0.0.1:\(proxy.port)"), "through the proxy, credentials kept out of the report")
        XCTAssertNil(response.connection.answer, "nothing pinned")
        XCTAssertEqual(engine.upstreamLookupCount, 0, "the engine was not asked")
        XCTAssertTrue(server.requests.isEmpty)
    }

    func testProxyPolicyPinDirectlyGoesToTheHTTPDNSAddress() async throws {
        let engine = Self.engine()
        let client = client(engine, environment: ["http_proxy": "http://127.0.0.1:\(proxy.port)"]) { $0.proxyPolicy = .pinDirectly }

        let response = try await client.send(URLRequest(url: URL(string: "http://proxied.test:\(server.port)/echo")!))
        XCTAssertEqual(response.connection.proxy, .bypassed("http://127.0.0.1:\(proxy.port)"))
        XCTAssertEqual(response.connection.connectedAddress, Bed.second)
        XCTAssertEqual(server.requests.count, 1)
        XCTAssertTrue(proxy.requestLines.isEmpty, "the proxy saw nothing")
    }

    func testProxyExemptedByNoProxyIsNotUsed() async throws {
        let engine = Self.engine()
        let client = client(engine, environment: ["http_proxy": "http://127.0.0.1:\(proxy.port)", "no_proxy": "example.com, .test"])

        let response = try await client.send(URLRequest(url: URL(string: "http://proxied.test:\(server.port)/echo")!))
        XCTAssertEqual(response.connection.proxy, HTTPDNSConnectionReport.ProxyUse.none)
        XCTAssertEqual(response.connection.connectedAddress, Bed.second)
        XCTAssertTrue(proxy.requestLines.isEmpty)
    }

    func testProxyRefusingTheTunnelIsAProxyFailure() async throws {
        let engine = Self.engine()
        let client = client(engine, environment: ["https_proxy": "http://127.0.0.1:\(proxy.port)"])
        do {
            _ = try await client.send(URLRequest(url: URL(string: "https://proxied.test:\(server.port)/")!))
            XCTFail("the proxy refuses CONNECT")
        } catch let error as URLError {
            XCTAssertEqual(error.code, .cannotConnectToHost, "what corelibs reports for an unreachable proxy")
            XCTAssertEqual((error.httpdnsUnderlyingError as? HTTPTransportError)?.code, .proxyConnectionFailed)
            XCTAssertEqual(proxy.requestLines, ["CONNECT proxied.test:\(server.port) HTTP/1.1"])
        }
    }

    func testProxyFailureTriggersTheStickyBlockRedirect() async throws {
        let certificates = try TestCertificates()
        defer { certificates.remove() }
        let tlsServer = try TestHTTPServer(address: Bed.second.description, tls: try certificates.issue(dnsNames: ["blocked.test"]))
        defer { tlsServer.stop() }
        let engine = Self.engine(trusting: certificates)
        let redirect = CountingResolver([Bed.second], ttl: 300)
        let client = client(engine, environment: ["https_proxy": "http://127.0.0.1:\(proxy.port)"]) { $0.blockRedirect = redirect }
        let url = URL(string: "https://blocked.test:\(tlsServer.port)/echo")!

        let first = try await client.send(URLRequest(url: url))
        XCTAssertEqual(first.response.statusCode, 200)
        XCTAssertTrue(first.connection.attempts.first?.failure?.hasPrefix("proxyConnectionFailed") == true, "\(first.connection.attempts)")
        XCTAssertTrue(first.connection.viaBlockRedirect)
        XCTAssertEqual(first.connection.proxy, .bypassed("http://127.0.0.1:\(proxy.port)"))
        XCTAssertEqual(first.connection.connectedAddress, Bed.second)

        let second = try await client.send(URLRequest(url: url))
        XCTAssertEqual(second.connection.attempts.map(\.address), [Bed.second], "straight to the redirect address")
        XCTAssertEqual(proxy.requestLines.count, 1, "the failing proxy is not asked again")
        XCTAssertEqual(redirect.calls, 1)
    }

    func testUnreachableProxyIsAProxyFailure() async throws {
        let dead = try LoopbackProxy()
        let port = dead.port
        dead.stop()
        let client = client(Self.engine(), environment: ["all_proxy": "http://127.0.0.1:\(port)"])
        do {
            _ = try await client.send(URLRequest(url: URL(string: "http://proxied.test:\(server.port)/")!))
            XCTFail("nothing listens at the proxy's port")
        } catch let error as URLError {
            XCTAssertEqual((error.httpdnsUnderlyingError as? HTTPTransportError)?.code, .proxyConnectionFailed)
            XCTAssertEqual(error.httpdnsConnectionReport?.proxy, .used("http://127.0.0.1:\(port)"))
        }
    }

    private func client(
        _ engine: HTTPDNSEngine, environment: [String: String], configure: (inout HTTPDNSClient.Configuration) -> Void = { _ in }
    ) -> HTTPDNSClient {
        HappyEyeballsTests.client(engine) { configuration in
            configuration.proxyEnvironment = environment
            configure(&configuration)
        }
    }

    static func engine(trusting certificates: TestCertificates? = nil) -> HTTPDNSEngine {
        HappyEyeballsTests.engine(["proxied.test": [Bed.second], "blocked.test": [Bed.dead]], trusting: certificates)
    }
}
