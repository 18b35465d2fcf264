import Foundation
import HTTPDNS
import HTTPDNSCore
import HTTPDNSServer
import XCTest

/// `/d`: answers checked as exact text and through the project's own ``DNSPodFormat`` client.
final class HTTPDNSServiceDNSPodTests: HTTPDNSServiceTestCase {
    static let aesKey = "0123456789abcdef"
    static let desKey = "k3y-for-des"

    private func service() throws -> HTTPDNSService {
        try startService { configuration in
            configuration.dnspod.accountKeys = ["7": Self.aesKey, "8": Self.desKey]
        }
    }

    func testExactTextAnswers() async throws {
        let url = base(try service())
        let cases: [(String, String)] = [
            ("/d?dn=www.example.test", "192.0.2.1;192.0.2.2"),
            ("/d?dn=www.example.test&ttl=1", "192.0.2.1;192.0.2.2,120"),
            ("/d?dn=WWW.Example.Test.&ttl=1&type=aaaa", "2001:db8::1,120"),
            ("/d?dn=www.example.test&ttl=1&type=addrs", "192.0.2.1;192.0.2.2,120-2001:db8::1,120"),
            ("/d?dn=v4only.example.test&ttl=1&type=addrs", "192.0.2.3,60-0"),
            ("/d?dn=www.example.test&ttl=1&clientip=1", "192.0.2.1;192.0.2.2,120|127.0.0.1"),
            ("/d?dn=nowhere.example.test&ttl=1", "0"),
            ("/d?dn=alias.example.test&ttl=1", "192.0.2.1;192.0.2.2,90"),
            ("/d?dn=x.wild.example.test", "192.0.2.9"),
            ("/d?dn=www.example.test,nowhere.example.test&ttl=1",
             "www.example.test.:192.0.2.1;192.0.2.2,120\nnowhere.example.test.:0"),
        ]
        for (path, expected) in cases {
            let response = try await fetch(url + path)
            XCTAssertEqual(response.statusCode, 200, path)
            XCTAssertEqual(text(response), expected, path)
        }
    }

    func testClientResolverParsesEveryFamily() async throws {
        let client = try resolver("dnspod=" + base(try service()))
        let v4 = try await client.resolve("www.example.test", family: .ipv4)
        XCTAssertEqual(v4.ipv4, ips(["192.0.2.1", "192.0.2.2"]))
        XCTAssertEqual(v4.ttl, 120)
        let v6 = try await client.resolve("www.example.test", family: .ipv6)
        XCTAssertEqual(v6.ipv6, ips(["2001:db8::1"]))
        let both = try await client.resolve("www.example.test", family: .both)
        XCTAssertEqual(both.ipv4 + both.ipv6, ips(["192.0.2.1", "192.0.2.2", "2001:db8::1"]))
        await assertResolveFails(client, "nowhere.example.test", code: .noAddress)
        await assertResolveFails(client, "v4only.example.test", family: .ipv6, code: .noAddress)
    }

    func testBatchParsesWithTheClientFormat() async throws {
        let url = base(try service())
        var settings = DNSPodFormat.Configuration(baseURL: url)
        settings.requestClientIP = true
        let format = DNSPodFormat(configuration: settings)
        let request = try format.request(for: ["www.example.test", "x.wild.example.test", "nowhere.example.test"], family: .both, now: 0)
        let response = try await fetch(request.url)
        let sets = try format.parse(status: response.statusCode, body: [UInt8](response.body), for: request)
        XCTAssertEqual(sets.map(\.host), ["www.example.test", "x.wild.example.test", "nowhere.example.test"])
        XCTAssertEqual(sets[1].ipv4, ips(["192.0.2.9"]))
        XCTAssertEqual(sets[1].ttl, 30)
        XCTAssertTrue(sets[2].isEmpty)
        XCTAssertEqual(sets[0].clientIP, "127.0.0.1")
    }

    func testEncryptedModesRoundTripThroughTheClient() async throws {
        let url = base(try service())
        let aes = try resolver("dnspod=\(url)?id=7&key=\(Self.aesKey)&alg=aes")
        let answer = try await aes.resolve("www.example.test", family: .ipv4)
        XCTAssertEqual(answer.ipv4, ips(["192.0.2.1", "192.0.2.2"]))
        let des = try resolver("dnspod=\(url)?id=8&key=\(Self.desKey)&alg=des")
        let desAnswer = try await des.resolve("www.example.test", family: .both)
        XCTAssertEqual(desAnswer.ipv6, ips(["2001:db8::1"]))
        // The answer on the wire is hex, not the addresses.
        let raw = try await fetch(url + "/d?dn=\(try DNSPodFormat(configuration: { var c = DNSPodFormat.Configuration(); c.key = Self.aesKey; return c }()).encrypt(Array("www.example.test".utf8), algorithm: .aes))&id=7&alg=aes")
        XCTAssertEqual(raw.statusCode, 200)
        XCTAssertFalse(text(raw).contains("192.0.2.1"))
        XCTAssertTrue(text(raw).allSatisfy(\.isHexDigit), text(raw))
    }

    func testEncryptedWithAnExpiryAnchor() async throws {
        let service = try service()
        var settings = DNSPodFormat.Configuration(baseURL: base(service))
        settings.accountID = "7"
        settings.key = Self.aesKey
        settings.algorithm = .aes
        settings.expiryAnchorSeconds = 600
        let format = DNSPodFormat(configuration: settings)
        let now = Int64(Date().timeIntervalSince1970)
        let fresh = try format.request(for: ["www.example.test"], family: .ipv4, now: now)
        let response = try await fetch(fresh.url)
        XCTAssertEqual(try format.parse(status: response.statusCode, body: [UInt8](response.body), for: fresh).first?.ipv4.count, 2)
        let replayed = try format.request(for: ["www.example.test"], family: .ipv4, now: now - 3_600)
        let refused = try await fetch(replayed.url)
        XCTAssertEqual(refused.statusCode, 401)
    }

    func testWrongKeyAndUnknownAccountAreUnauthorized() async throws {
        let url = base(try service())
        let wrongKey = try resolver("dnspod=\(url)?id=7&key=fedcba9876543210&alg=aes")
        await assertResolveFails(wrongKey, "www.example.test", code: .unauthorized)
        let unknown = try resolver("dnspod=\(url)?id=99&key=\(Self.aesKey)&alg=aes")
        await assertResolveFails(unknown, "www.example.test", code: .unauthorized)
        let garbage = try await fetch(url + "/d?dn=zz&id=7&alg=aes")
        XCTAssertEqual(garbage.statusCode, 401)
        let badAlg = try await fetch(url + "/d?dn=www.example.test&id=7&alg=rot13")
        XCTAssertEqual(badAlg.statusCode, 400)
    }

    func testBatchIsBounded() async throws {
        let url = base(try service())
        let names = (0..<11).map { "n\($0).example.test" }.joined(separator: ",")
        let response = try await fetch(url + "/d?dn=" + names)
        XCTAssertEqual(response.statusCode, 400)
        let ten = (0..<10).map { "n\($0).example.test" }.joined(separator: ",")
        let accepted = try await fetch(url + "/d?dn=" + ten)
        XCTAssertEqual(accepted.statusCode, 200)
        XCTAssertEqual(text(accepted).split(separator: "\n").count, 10)
    }
}
