import DNSWire
import Foundation
import HTTPDNS
import HTTPDNSCore
import HTTPDNSServer
import HTTPDNSTransport
import XCTest

/// Starts services on loopback port 0 and talks to them with the project's libcurl transport and
/// client formats; every service is stopped in `tearDown`.
class HTTPDNSServiceTestCase: XCTestCase {
    static let zoneJSON = """
        {
          "www.example.test": {"A": ["192.0.2.1", "192.0.2.2"], "AAAA": ["2001:db8::1"], "ttl": 120},
          "V4Only.Example.Test.": {"a": ["192.0.2.3"], "TTL": 60},
          "*.wild.example.test": {"A": ["192.0.2.9"], "ttl": 30},
          "alias.example.test": {"CNAME": "www.example.test", "ttl": 90},
          "name.test": {"A": ["127.0.0.1"], "ttl": 5}
        }
        """

    private var started: [HTTPDNSService] = []

    override func tearDown() {
        for service in started { service.stop() }
        started = []
        super.tearDown()
    }

    func makeZone() throws -> HTTPDNSZone {
        try HTTPDNSZone(json: Data(Self.zoneJSON.utf8))
    }

    /// Starts a service with the test zone; a failure to start fails the test.
    func startService(_ configure: (inout HTTPDNSService.Configuration) -> Void = { _ in }) throws -> HTTPDNSService {
        var configuration = HTTPDNSService.Configuration(zone: try makeZone())
        configure(&configuration)
        let service = HTTPDNSService(configuration: configuration)
        do {
            try service.start()
        } catch {
            XCTFail("cannot start the service: \(error)")
            throw error
        }
        started.append(service)
        XCTAssertNotNil(service.port)
        return service
    }

    func base(_ service: HTTPDNSService) -> String {
        service.baseURL?.absoluteString ?? "http://127.0.0.1:1"
    }

    /// One HTTP exchange; transport failures fail the test.
    func fetch(
        _ url: String, method: String = "GET", headers: [String: String] = [:], body: Data? = nil,
        trust: HTTPDNSTrust = .system
    ) async throws -> HTTPTransportResponse {
        let target = try XCTUnwrap(URL(string: url), "bad URL \(url)")
        var request = HTTPTransportRequest(url: target, method: method)
        request.headers = headers.sorted { $0.key < $1.key }.map { HTTPTransportHeader(name: $0.key, value: $0.value) }
        if let body { request.body = .data(body) }
        request.trust = trust
        request.timeouts = .init(connect: .seconds(5), total: .seconds(20), idle: .seconds(20))
        return try await HTTPTransport.shared.send(request)
    }

    func text(_ response: HTTPTransportResponse) -> String {
        String(decoding: response.body, as: UTF8.self)
    }

    /// A client resolver from `KIND=URL`, exactly as the CLI builds one.
    func resolver(_ spec: String) throws -> any HTTPDNSResolver {
        try HTTPDNSProviderSpec(parsing: spec).makeResolver(timeout: .seconds(10))
    }

    /// Resolves and expects an `HTTPDNSError` with `code`.
    func assertResolveFails(
        _ resolver: any HTTPDNSResolver, _ host: String, family: HTTPDNSAddressFamily = .ipv4,
        code: HTTPDNSError.Code, file: StaticString = #filePath, line: UInt = #line
    ) async {
        do {
            let set = try await resolver.resolve(host, family: family)
            XCTFail("expected \(code), got \(set)", file: file, line: line)
        } catch let error as HTTPDNSError {
            XCTAssertEqual(error.code, code, "\(error)", file: file, line: line)
        } catch {
            XCTFail("unexpected error \(error)", file: file, line: line)
        }
    }

    func ips(_ list: [String]) -> [HTTPDNSIPAddress] { list.compactMap(HTTPDNSIPAddress.init) }
}

final class HTTPDNSServiceTests: HTTPDNSServiceTestCase {
    func testStartsOnAPickedPortAndStops() async throws {
        let service = try startService()
        let port = try XCTUnwrap(service.port)
        XCTAssertGreaterThan(port, 0)
        let response = try await fetch(base(service) + "/nothing-here")
        XCTAssertEqual(response.statusCode, 404)
        service.stop()
        XCTAssertNil(service.port)
        service.stop()
    }

    func testCertificateWithoutKeyIsAConfigurationError() {
        var configuration = HTTPDNSService.Configuration()
        configuration.tlsCertificatePEM = "-----BEGIN CERTIFICATE-----"
        let service = HTTPDNSService(configuration: configuration)
        XCTAssertThrowsError(try service.start()) { error in
            XCTAssertEqual((error as? HTTPDNSServiceError)?.code, .invalidConfiguration)
        }
    }

    func testBusyPortIsCannotListen() throws {
        let first = try startService()
        var configuration = HTTPDNSService.Configuration()
        configuration.port = try XCTUnwrap(first.port)
        let second = HTTPDNSService(configuration: configuration)
        XCTAssertThrowsError(try second.start()) { error in
            XCTAssertEqual((error as? HTTPDNSServiceError)?.code, .cannotListen)
        }
    }

    func testOtherMethodsOnTextEndpointsAre405() async throws {
        let service = try startService()
        for path in ["/d?dn=www.example.test", "/ips?host=www.example.test", "/100000/d?host=www.example.test"] {
            let response = try await fetch(base(service) + path, method: "DELETE")
            XCTAssertEqual(response.statusCode, 405, path)
        }
    }

    func testHostileQueriesGet400NeverACrash() async throws {
        let service = try startService()
        let long = String(repeating: "a", count: 300)
        let paths = [
            "/d", "/d?dn=", "/d?dn=%00", "/d?dn=\(long)", "/d?dn=a..b", "/d?dn=1.2.3.4", "/d?dn=a&dn=b",
            "/d?dn=www.example.test&type=mx", "/ips", "/ips?host=-bad-", "/ips?host=\(long)",
            "/100000/d", "/100000/d?host=a,b", "/100000/d?host=a&query=5", "/bad%20acct/d?host=a",
            "/dns-query", "/dns-query?name=", "/dns-query?name=a..b", "/dns-query?name=a&type=NOPE",
            "/dns-query?dns=%25%25%25", "/dns-query?dns=A",
        ]
        for path in paths {
            let response = try await fetch(base(service) + path)
            XCTAssertEqual(response.statusCode, 400, "\(path): \(text(response))")
            XCTAssertLessThan(response.body.count, 200, path)
        }
    }
}
