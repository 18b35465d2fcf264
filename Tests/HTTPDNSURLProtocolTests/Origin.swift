import Foundation
import HTTPDNS
import HTTPDNSCore
import HTTPDNSServer
import HTTPDNSTestSupport
import HTTPDNSNetworking
import HTTPDNSURLSession
import HTTPServing
import XCTest
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A loopback origin (``HTTPServer``) that records what it received and answers with a script.
final class Origin: Sendable {
    private final class Log: Sendable {
        let requests = HTTPDNSLock<[HTTPServer.Request]>([])
    }

    let server: HTTPServer
    let address: HTTPDNSIPAddress
    private let log = Log()

    init(
        address: String = "127.0.0.1", port: Int = 0, tls: TestCertificates.Leaf? = nil,
        respond: @escaping @Sendable (HTTPServer.Request) -> HTTPServer.Response = Origin.echo
    ) throws {
        var configuration = HTTPServer.Configuration(address: HTTPDNSIPAddress(address)!, port: port)
        configuration.tlsCertificatePEM = tls?.certificatePEM
        configuration.tlsKeyPEM = tls?.keyPEM
        configuration.maxRequestBodyBytes = 8 << 20
        let log = self.log
        self.address = HTTPDNSIPAddress(address)!
        server = try HTTPServer(configuration: configuration) { request in
            log.requests.withLock { $0.append(request) }
            return respond(request)
        }
    }

    var port: Int { server.port }
    var requests: [HTTPServer.Request] { log.requests.withLock { $0 } }

    func stop() { server.stop() }

    /// Answers with what it saw: method, Host header, body length, and the body itself.
    @Sendable static func echo(_ request: HTTPServer.Request) -> HTTPServer.Response {
        var response = HTTPServer.Response(body: request.body)
        response.headers = [
            .init(name: "X-Method", value: request.method),
            .init(name: "X-Host", value: request.header("host") ?? ""),
            .init(name: "X-Path", value: request.path),
            .init(name: "X-Cookie", value: request.header("cookie") ?? ""),
        ]
        return response
    }
}

/// An engine whose only provider is a static table, with loopback allowed.
func makeClient(
    _ table: [String: [String]], local: [String: [String]] = [:], trust: HTTPTransportTrustChoice = .system,
    configure: (inout HTTPDNSConfiguration, inout HTTPDNSClient.Configuration) -> Void = { _, _ in }
) -> HTTPDNSClient {
    let entries = table.mapValues { $0.compactMap(HTTPDNSIPAddress.init) }
    var configuration = HTTPDNSConfiguration(resolvers: [HTTPDNSStaticResolver(entries, ttl: 600, name: "test-httpdns")])
    configuration.hygiene = .init(allowPrivate: true)
    configuration.localDNS = .custom(HTTPDNSStaticResolver(local.mapValues { $0.compactMap(HTTPDNSIPAddress.init) }, name: "test-localdns"))
    configuration.protectedHosts = HTTPDNSHostPolicy(["*.test"])
    var clientConfiguration = HTTPDNSClient.Configuration()
    clientConfiguration.connectTimeout = .seconds(2)
    if case .caFile(let path) = trust { configuration.trust = .caFile(path) }
    configure(&configuration, &clientConfiguration)
    return HTTPDNSClient(engine: HTTPDNSEngine(configuration: configuration), configuration: clientConfiguration)
}

enum HTTPTransportTrustChoice {
    case system
    case caFile(String)
}

/// A URLSession whose configuration has the protocol installed for `client`.
func protectedSession(_ client: HTTPDNSClient) throws -> URLSession {
    let configuration = URLSessionConfiguration.ephemeral
    try configuration.httpdnsInstall(client)
    return URLSession(configuration: configuration)
}

/// A loopback port with nothing listening (bound once, then closed).
func refusedPort(on address: String) throws -> Int {
    let probe = try HTTPServer(configuration: .init(address: HTTPDNSIPAddress(address)!, port: 0)) { _ in .text("") }
    let port = probe.port
    probe.stop()
    return port
}
