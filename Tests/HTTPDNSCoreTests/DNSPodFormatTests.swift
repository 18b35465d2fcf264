import HTTPDNSCore
import XCTest

final class DNSPodFormatTests: XCTestCase {
    private let fixedIV: @Sendable (Int) throws(HTTPDNSError) -> [UInt8] = { count in (0..<count).map { UInt8($0) } }

    private func format(_ edit: (inout DNSPodFormat.Configuration) -> Void = { _ in }) -> DNSPodFormat {
        var configuration = DNSPodFormat.Configuration()
        edit(&configuration)
        return DNSPodFormat(configuration: configuration, randomBytes: fixedIV)
    }

    private func parse(_ body: String, hosts: [String] = ["www.example.com"], family: HTTPDNSAddressFamily = .ipv4,
                       format: DNSPodFormat? = nil, status: Int = 200) throws -> [HTTPDNSRecordSet] {
        let format = format ?? self.format()
        let request = try format.request(for: hosts, family: family, now: 0)
        return try format.parse(status: status, body: bytes(body), for: request)
    }

    // MARK: Requests

    func testRequestURLs() throws {
        let plain = format()
        XCTAssertEqual(try plain.request(for: ["www.example.com"], family: .ipv4, now: 0).url, "http://119.29.29.98/d?dn=www.example.com&ttl=1")
        XCTAssertEqual(try plain.request(for: ["www.example.com"], family: .ipv6, now: 0).url, "http://119.29.29.98/d?dn=www.example.com&ttl=1&type=aaaa")
        XCTAssertEqual(try plain.request(for: ["www.example.com"], family: .both, now: 0).url, "http://119.29.29.98/d?dn=www.example.com&ttl=1&type=addrs")
        let batch = try plain.request(for: ["www.qq.com", "WWW.Example.COM."], family: .ipv4, now: 0)
        XCTAssertEqual(batch.url, "http://119.29.29.98/d?dn=www.qq.com,www.example.com&ttl=1")
        XCTAssertEqual(batch.hosts, ["www.qq.com", "www.example.com"])
        XCTAssertEqual(batch.method, "GET")

        let full = format {
            $0.baseURL = "https://119.29.29.99/"
            $0.accountID = "42"
            $0.token = "tok en"
            $0.clientSubnet = "1.2.3.0"
            $0.requestClientIP = true
        }
        XCTAssertEqual(
            try full.request(for: ["a.example"], family: .ipv4, now: 0).url,
            "https://119.29.29.99/d?dn=a.example&id=42&token=tok%20en&ttl=1&ip=1.2.3.0&clientip=1")
        XCTAssertEqual(try format { $0.baseURL = "http://127.0.0.1:8053" }.request(for: ["a.b"], family: .ipv4, now: 0).url,
                       "http://127.0.0.1:8053/d?dn=a.b&ttl=1")
    }

    func testEncryptedRequests() throws {
        // DES key "12345678" → see HTTPDNSCryptoTests.testDESECBOpenSSLVectors for the openssl command.
        let des = format { $0.accountID = "1"; $0.key = "12345678extra"; $0.algorithm = .des }
        XCTAssertEqual(try des.request(for: ["www.dnspod.cn"], family: .ipv4, now: 0).url,
                       "http://119.29.29.98/d?dn=016f412edc2957272cf14dc3b282f4b3&id=1&alg=des&ttl=1")
        // echo -n "www.dnspod.cn" | openssl enc -aes-128-cbc -K 30313233343536373839616263646566 -iv 000102030405060708090a0b0c0d0e0f | xxd -p
        let aes = format { $0.accountID = "1"; $0.key = "0123456789abcdef"; $0.algorithm = .aes }
        XCTAssertEqual(try aes.request(for: ["www.dnspod.cn"], family: .ipv4, now: 0).url,
                       "http://119.29.29.98/d?dn=000102030405060708090a0b0c0d0e0f556fad2b1e6696ecb7b748a48d600025&id=1&alg=aes&ttl=1")
        // echo -n "www.dnspod.cn;1700000600" | openssl enc -aes-128-cbc -K 30313233343536373839616263646566 -iv 000102030405060708090a0b0c0d0e0f | xxd -p
        var anchored = aes
        anchored.configuration.expiryAnchorSeconds = 600
        XCTAssertEqual(
            try anchored.request(for: ["www.dnspod.cn"], family: .ipv4, now: 1_700_000_000).url,
            "http://119.29.29.98/d?dn=000102030405060708090a0b0c0d0e0f710502e2b3efa8044dc44060fa2887886ac3d733c53c298d28e42ef69c9deee4&id=1&alg=aes&ttl=1")
        // The real IV source gives a different dn each time.
        let random = DNSPodFormat(configuration: aes.configuration)
        XCTAssertNotEqual(try random.request(for: ["a.b"], family: .ipv4, now: 0).url, try random.request(for: ["a.b"], family: .ipv4, now: 0).url)
    }

    func testBadConfigurationAndHosts() {
        assertThrowsCode(.invalidConfiguration) { try self.format { $0.algorithm = .des; $0.key = "12345678" }.request(for: ["a.b"], family: .ipv4, now: 0) }
        assertThrowsCode(.invalidConfiguration) { try self.format { $0.algorithm = .des; $0.accountID = "1" }.request(for: ["a.b"], family: .ipv4, now: 0) }
        assertThrowsCode(.invalidConfiguration) { try self.format { $0.algorithm = .des; $0.accountID = "1"; $0.key = "1234567" }.request(for: ["a.b"], family: .ipv4, now: 0) }
        assertThrowsCode(.invalidConfiguration) { try self.format { $0.algorithm = .aes; $0.accountID = "1"; $0.key = "0123456789abcde" }.request(for: ["a.b"], family: .ipv4, now: 0) }
        assertThrowsCode(.invalidConfiguration) { try self.format { $0.baseURL = "ftp://x" }.request(for: ["a.b"], family: .ipv4, now: 0) }
        assertThrowsCode(.invalidConfiguration) { try self.format { $0.baseURL = "http://a b" }.request(for: ["a.b"], family: .ipv4, now: 0) }
        for host in ["", "bad host", "a,b", "1.2.3.4", "::1", "a..b", "-a.b", String(repeating: "a", count: 64) + ".com", "a/b", "é.com"] {
            assertThrowsCode(.invalidHost, host) { try self.format().request(for: [host], family: .ipv4, now: 0) }
        }
        assertThrowsCode(.invalidHost) { try self.format().request(for: [], family: .ipv4, now: 0) }
        assertThrowsCode(.unsupported) { try self.format().request(for: (0..<11).map { "h\($0).com" }, family: .ipv4, now: 0) }
        XCTAssertEqual(try format().batchedRequests(for: (0..<11).map { "h\($0).com" }, family: .ipv4, now: 0).count, 2)
    }

    // MARK: Answers (golden vectors from provider-apis.md)

    func testSingleAnswer() throws {
        XCTAssertEqual(try parse("1.2.3.4;5.6.7.8,120"),
                       [HTTPDNSRecordSet(host: "www.example.com", ipv4: [ip("1.2.3.4"), ip("5.6.7.8")], ttl: 120)])
        XCTAssertEqual(try parse("123.59.226.2;123.59.226.3,303|59.37.125.43"),
                       [HTTPDNSRecordSet(host: "www.example.com", ipv4: [ip("123.59.226.2"), ip("123.59.226.3")], ttl: 303, clientIP: "59.37.125.43")])
        // Without ttl=1 the service sends no TTL; trailing newline is normal.
        XCTAssertEqual(try parse("1.2.3.4\n"), [HTTPDNSRecordSet(host: "www.example.com", ipv4: [ip("1.2.3.4")])])
        XCTAssertEqual(try parse("2402:4e00::1;2402:4e00::2,600", family: .ipv6),
                       [HTTPDNSRecordSet(host: "www.example.com", ipv6: [ip("2402:4e00::1"), ip("2402:4e00::2")], ttl: 600)])
    }

    func testBatchAnswer() throws {
        // The reference writes the client address as the placeholder `cip`; a real one is used here.
        let body = "www.qq.com.:1.1.1.1;2.2.2.2,300|9.9.9.9\nwww.example.com.:3.3.3.3,60|9.9.9.9\n"
        XCTAssertEqual(try parse(body, hosts: ["www.qq.com", "www.example.com"]), [
            HTTPDNSRecordSet(host: "www.qq.com", ipv4: [ip("1.1.1.1"), ip("2.2.2.2")], ttl: 300, clientIP: "9.9.9.9"),
            HTTPDNSRecordSet(host: "www.example.com", ipv4: [ip("3.3.3.3")], ttl: 60, clientIP: "9.9.9.9"),
        ])
        // Order follows the request; a name with `0` is an empty set; names without dots and IPv6 work.
        let mixed = "b.com:0\r\na.com.:2402:4e00::1,30"
        XCTAssertEqual(try parse(mixed, hosts: ["a.com", "b.com"], family: .ipv6), [
            HTTPDNSRecordSet(host: "a.com", ipv6: [ip("2402:4e00::1")], ttl: 30),
            HTTPDNSRecordSet(host: "b.com"),
        ])
        assertThrowsCode(.malformedAnswer) { try self.parse("www.qq.com.:1.1.1.1,300|cip", hosts: ["www.qq.com"]) }
        // A one-label hex name must not eat the first group of an IPv6 answer.
        XCTAssertEqual(try parse("ab:cd::1,60", hosts: ["ab"], family: .ipv6).first?.ipv6, [ip("ab:cd::1")])
        XCTAssertEqual(try parse("ab.:cd::1,60", hosts: ["ab"], family: .ipv6).first?.ipv6, [ip("cd::1")])
        assertThrowsCode(.malformedAnswer, "stray name in single answer") { try self.parse("evil.com.:1.1.1.1,1", hosts: ["a.com"]) }
        assertThrowsCode(.noAddress) { try self.parse("a.com.:0\nb.com.:0", hosts: ["a.com", "b.com"]) }
        assertThrowsCode(.malformedAnswer, "unrequested name") { try self.parse("evil.com.:1.1.1.1,1", hosts: ["a.com", "b.com"]) }
        assertThrowsCode(.malformedAnswer, "twice") { try self.parse("a.com.:1.1.1.1,1\na.com.:2.2.2.2,1", hosts: ["a.com", "b.com"]) }
        assertThrowsCode(.malformedAnswer, "no name in batch") { try self.parse("1.1.1.1,1", hosts: ["a.com", "b.com"]) }
    }

    func testAddrsAnswer() throws {
        XCTAssertEqual(try parse("1.1.1.1;2.2.2.2,120-2402:4e00::1,60|9.9.9.9", family: .both),
                       [HTTPDNSRecordSet(host: "www.example.com", ipv4: [ip("1.1.1.1"), ip("2.2.2.2")], ipv6: [ip("2402:4e00::1")], ttl: 60, clientIP: "9.9.9.9")])
        XCTAssertEqual(try parse("0-2402:4e00::1,60", family: .both),
                       [HTTPDNSRecordSet(host: "www.example.com", ipv6: [ip("2402:4e00::1")], ttl: 60)])
        XCTAssertEqual(try parse("1.1.1.1,120-0", family: .both),
                       [HTTPDNSRecordSet(host: "www.example.com", ipv4: [ip("1.1.1.1")], ttl: 120)])
        XCTAssertEqual(try parse("1.1.1.1,120", family: .both),
                       [HTTPDNSRecordSet(host: "www.example.com", ipv4: [ip("1.1.1.1")], ttl: 120)])
        assertThrowsCode(.noAddress) { try self.parse("0-0", family: .both) }
        assertThrowsCode(.malformedAnswer) { try self.parse("2402::1,60-1.1.1.1,60", family: .both) }
        assertThrowsCode(.malformedAnswer) { try self.parse("1.1.1.1,1-2402::1,1-2402::2,1", family: .both) }
    }

    func testNoAddressAndStatus() {
        for body in ["", "0", "0\n", "\n", "  \r\n"] {
            assertThrowsCode(.noAddress, body.debugDescription) { try self.parse(body) }
        }
        assertThrowsCode(.unauthorized) { try self.parse("", status: 401) }
        assertThrowsCode(.unauthorized) { try self.parse("", status: 403) }
        assertThrowsCode(.httpStatus) { try self.parse("1.2.3.4,1", status: 500) }
    }

    func testEncryptedAnswers() throws {
        // echo -n "1.2.3.4;5.6.7.8,120" | openssl enc -des-ecb -K 3132333435363738 -provider legacy -provider default | xxd -p
        let des = format { $0.accountID = "1"; $0.key = "12345678"; $0.algorithm = .des }
        let expected = [HTTPDNSRecordSet(host: "www.example.com", ipv4: [ip("1.2.3.4"), ip("5.6.7.8")], ttl: 120)]
        XCTAssertEqual(try parse("ebce341ccd8d31044957e28df7468e404b78834a21695b09\n", format: des), expected)
        // echo -n "1.2.3.4;5.6.7.8,120" | openssl enc -aes-128-cbc -K 30313233343536373839616263646566 -iv 0f0e0d0c0b0a09080706050403020100 | xxd -p
        let aes = format { $0.accountID = "1"; $0.key = "0123456789abcdef"; $0.algorithm = .aes }
        XCTAssertEqual(try parse("0f0e0d0c0b0a09080706050403020100ad750aef7d1370c4d19b7549b938d81a3cb34b178b7ad0ce9907e148d04a27bd", format: aes), expected)
        assertThrowsCode(.noAddress) { try self.parse("0", format: aes) }
        assertThrowsCode(.noAddress) { try self.parse("", format: des) }
        for junk in ["1.2.3.4,60", "zz", "0f0e", "0f0e0d0c0b0a09080706050403020100", "0f0e0d0c0b0a09080706050403020100ad750aef7d1370c4d19b7549b938d81a"] {
            assertThrowsCode(.malformedAnswer, junk) { try self.parse(junk, format: aes) }
        }
        assertThrowsCode(.malformedAnswer) { try self.parse("ebce341ccd8d31044957e28df7468e40", format: des) }
    }

    func testMalformedAnswers() {
        let junk = [
            "1.2.3", "1.2.3.4,", "1.2.3.4,-1", "1.2.3.4,99999999999", "1.2.3.4,2147483648", "1.2.3.4,1e3",
            "1.2.3.4;;5.6.7.8,1", ";1.2.3.4,1", "1.2.3.4;,1", "1.2.3.4,60|notip", "1.2.3.4,60|", "2402::1,60",
            "<html>blocked</html>", "1.2.3.4 5.6.7.8", "01.2.3.4,1", "1.2.3.4,1,2",
        ]
        for body in junk {
            assertThrowsCode(.malformedAnswer, body) { try self.parse(body) }
        }
        XCTAssertEqual(try? parse("1.2.3.4,2147483647").first?.ttl, 2_147_483_647)
        assertThrowsCode(.malformedAnswer) {
            try self.format().parse(status: 200, body: [0xff, 0xfe], for: HTTPDNSProviderRequest(url: "x", hosts: ["a.b"], family: .ipv4))
        }
        let tooMany = (0..<65).map { "1.1.1.\($0)" }.joined(separator: ";") + ",1"
        assertThrowsCode(.malformedAnswer) { try self.parse(tooMany) }
        let huge = String(repeating: "1.2.3.4;", count: 70 * 1024 / 8) + "1.2.3.4,1"
        assertThrowsCode(.malformedAnswer) { try self.parse(huge) }
        let manyLines = String(repeating: "a.com.:0\n", count: 300)
        assertThrowsCode(.malformedAnswer) { try self.parse(manyLines, hosts: ["a.com", "b.com"]) }
    }

    func testFuzz() throws {
        let request = try format().request(for: ["www.qq.com", "www.example.com"], family: .both, now: 0)
        let valid = bytes("www.qq.com.:1.1.1.1;2.2.2.2,300-2402:4e00::1,60|9.9.9.9\nwww.example.com.:0-2402:4e00::2,60")
        let result = fuzz(valid, seed: 1) { body in try self.format().parse(status: 200, body: body, for: request) }
        XCTAssertGreaterThan(result.rejected, 100)
        XCTAssertGreaterThan(result.accepted, 0)
        let single = try format().request(for: ["a.com"], family: .ipv4, now: 0)
        let singleResult = fuzz(bytes("123.59.226.2;123.59.226.3,303|59.37.125.43"), seed: 2) { body in
            try self.format().parse(status: 200, body: body, for: single)
        }
        XCTAssertGreaterThan(singleResult.rejected, 100)
    }
}
