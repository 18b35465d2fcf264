import Foundation
import HTTPDNS
import HTTPDNSCore
import HTTPDNSServer
import XCTest

/// `/{account}/d`, `resolve`, `sign_d`, `sign_resolve`, checked as exact JSON and through the
/// project's own ``AlibabaFormat`` client.
final class HTTPDNSServiceAlibabaTests: HTTPDNSServiceTestCase {
    static let secret = "IAmASecret"

    private func service(accounts: Set<String>? = nil) throws -> HTTPDNSService {
        try startService { configuration in
            configuration.alibaba.secrets = ["100000": Self.secret]
            configuration.alibaba.accounts = accounts
        }
    }

    func testExactSingleAnswer() async throws {
        let url = base(try service())
        let response = try await fetch(url + "/100000/d?host=www.example.test&query=4,6")
        XCTAssertEqual(response.statusCode, 200)
        XCTAssertEqual(response.header("content-type"), "application/json")
        XCTAssertEqual(
            text(response),
            #"{"host":"www.example.test","ips":["192.0.2.1","192.0.2.2"],"ipsv6":["2001:db8::1"],"ttl":120,"origin_ttl":120,"client_ip":"127.0.0.1"}"#)
        let v4 = try await fetch(url + "/100000/d?host=v4only.example.test")
        XCTAssertEqual(
            text(v4), #"{"host":"v4only.example.test","ips":["192.0.2.3"],"ipsv6":[],"ttl":60,"origin_ttl":60,"client_ip":"127.0.0.1"}"#)
    }

    func testExactBatchAnswer() async throws {
        let url = base(try service())
        let response = try await fetch(url + "/100000/resolve?host=www.example.test,v4only.example.test&query=4,6")
        XCTAssertEqual(response.statusCode, 200)
        let expected = """
            {"dns":[{"host":"www.example.test","client_ip":"127.0.0.1","ips":["192.0.2.1","192.0.2.2"],"type":1,"ttl":120,"origin_ttl":120},\
            {"host":"www.example.test","client_ip":"127.0.0.1","ips":["2001:db8::1"],"type":28,"ttl":120,"origin_ttl":120},\
            {"host":"v4only.example.test","client_ip":"127.0.0.1","ips":["192.0.2.3"],"type":1,"ttl":60,"origin_ttl":60},\
            {"host":"v4only.example.test","client_ip":"127.0.0.1","ips":[],"type":28,"ttl":60,"origin_ttl":60}]}
            """
        XCTAssertEqual(text(response), expected)
    }

    func testClientResolverUnsignedAndSigned() async throws {
        let url = base(try service())
        let plain = try resolver("alibaba=\(url)/100000")
        let both = try await plain.resolve("www.example.test", family: .both)
        XCTAssertEqual(both.ipv4, ips(["192.0.2.1", "192.0.2.2"]))
        XCTAssertEqual(both.ipv6, ips(["2001:db8::1"]))
        XCTAssertEqual(both.clientIP, "127.0.0.1")
        let signed = try resolver("alibaba=\(url)/100000?secret=\(Self.secret)")
        let answer = try await signed.resolve("alias.example.test", family: .ipv4)
        XCTAssertEqual(answer.ipv4, ips(["192.0.2.1", "192.0.2.2"]))
        let wrong = try resolver("alibaba=\(url)/100000?secret=guess")
        await assertResolveFails(wrong, "www.example.test", code: .unauthorized)
        await assertResolveFails(plain, "nowhere.example.test", code: .noAddress)
    }

    func testSignedBatchThroughTheClientFormat() async throws {
        let url = base(try service())
        var settings = AlibabaFormat.Configuration(serviceURL: url, accountID: "100000")
        settings.secret = Self.secret
        let format = AlibabaFormat(configuration: settings)
        let request = try format.request(
            for: ["www.example.test", "x.wild.example.test"], family: .both, now: Int64(Date().timeIntervalSince1970))
        XCTAssertTrue(request.url.contains("/sign_resolve?"), request.url)
        let response = try await fetch(request.url)
        let sets = try format.parse(status: response.statusCode, body: [UInt8](response.body), for: request)
        XCTAssertEqual(sets.map(\.host), ["www.example.test", "x.wild.example.test"])
        XCTAssertEqual(sets[1].ipv4, ips(["192.0.2.9"]))
    }

    func testSignatureErrors() async throws {
        let url = base(try service())
        let now = Int64(Date().timeIntervalSince1970)
        let past = now - 10
        let expiredSignature = AlibabaFormat.legacySignature(hosts: "www.example.test", secret: Self.secret, expiry: past)
        let expired = try await fetch(url + "/100000/sign_d?host=www.example.test&t=\(past)&s=\(expiredSignature)")
        XCTAssertEqual(expired.statusCode, 403)
        XCTAssertEqual(text(expired), #"{"code":"SignatureExpired"}"#)
        let future = now + 600
        let forged = try await fetch(url + "/100000/sign_d?host=www.example.test&t=\(future)&s=\(String(repeating: "0", count: 32))")
        XCTAssertEqual(text(forged), #"{"code":"InvalidSignature"}"#)
        XCTAssertEqual(forged.statusCode, 403)
        let missing = try await fetch(url + "/100000/sign_d?host=www.example.test")
        XCTAssertEqual(missing.statusCode, 403)
        let otherAccount = try await fetch(url + "/200000/sign_d?host=www.example.test&t=\(future)&s=\(expiredSignature)")
        XCTAssertEqual(text(otherAccount), #"{"code":"InvalidSignature"}"#)
        // The vendor's golden vector is what the server checks against.
        XCTAssertEqual(
            AlibabaFormat.legacySignature(hosts: "www.aliyun.com", secret: "IAmASecret", expiry: 1_534_316_400),
            "60c71e98b6d7fcbb366243e224eab457")
    }

    func testLimitExceededAndBadArguments() async throws {
        let url = base(try service(accounts: ["100000"]))
        let six = (0..<6).map { "n\($0).example.test" }.joined(separator: ",")
        let tooMany = try await fetch(url + "/100000/resolve?host=" + six)
        XCTAssertEqual(tooMany.statusCode, 400)
        XCTAssertEqual(text(tooMany), #"{"code":"LimitExceeded"}"#)
        let five = (0..<5).map { "n\($0).example.test" }.joined(separator: ",")
        let accepted = try await fetch(url + "/100000/resolve?host=" + five)
        XCTAssertEqual(accepted.statusCode, 200)
        let unknownAccount = try await fetch(url + "/999/d?host=www.example.test")
        XCTAssertEqual(unknownAccount.statusCode, 403)
        XCTAssertEqual(text(unknownAccount), #"{"code":"InvalidAccount"}"#)
        let noHost = try await fetch(url + "/100000/d")
        XCTAssertEqual(text(noHost), #"{"code":"MissingArgument"}"#)
        let badHost = try await fetch(url + "/100000/d?host=a%22b")
        XCTAssertEqual(text(badHost), #"{"code":"InvalidHost"}"#)
    }
}
