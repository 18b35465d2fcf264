import Foundation
import HTTPDNS
import HTTPDNSCore
import HTTPDNSServer
import XCTest

/// `/ips?host=`: exact JSON and the project's ``IPListFormat`` client.
final class HTTPDNSServiceIPListTests: HTTPDNSServiceTestCase {
    func testExactAnswers() async throws {
        let url = base(try startService())
        let found = try await fetch(url + "/ips?host=www.example.test")
        XCTAssertEqual(found.statusCode, 200)
        XCTAssertEqual(text(found), #"{"ips":["192.0.2.1","192.0.2.2","2001:db8::1"],"ttl":120}"#)
        let missing = try await fetch(url + "/ips?host=nowhere.example.test")
        XCTAssertEqual(missing.statusCode, 200)
        XCTAssertEqual(text(missing), #"{"ips":[],"ttl":60}"#)
    }

    func testClientResolver() async throws {
        let client = try resolver("ips=" + base(try startService()) + "/ips")
        let answer = try await client.resolve("alias.example.test", family: .both)
        XCTAssertEqual(answer.ipv4, ips(["192.0.2.1", "192.0.2.2"]))
        XCTAssertEqual(answer.ipv6, ips(["2001:db8::1"]))
        XCTAssertEqual(answer.ttl, 90)
        await assertResolveFails(client, "nowhere.example.test", code: .noAddress)
    }
}
