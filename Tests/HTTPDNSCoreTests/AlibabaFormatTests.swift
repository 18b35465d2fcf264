import HTTPDNSCore
import XCTest

final class AlibabaFormatTests: XCTestCase {
    private let fixedIV: @Sendable (Int) throws(HTTPDNSError) -> [UInt8] = { count in (0..<count).map { UInt8($0) } }
    /// `t`/`exp` = now + 600, so this `now` gives the vendor's expiry 1534316400.
    private let vendorNow: Int64 = 1_534_316_400 - 600

    private func format(_ edit: (inout AlibabaFormat.Configuration) -> Void = { _ in }) -> AlibabaFormat {
        var configuration = AlibabaFormat.Configuration(accountID: "100000")
        edit(&configuration)
        return AlibabaFormat(configuration: configuration, randomBytes: fixedIV)
    }

    private func parse(_ body: String, hosts: [String] = ["www.aliyun.com"], family: HTTPDNSAddressFamily = .both,
                       format: AlibabaFormat? = nil, status: Int = 200) throws -> [HTTPDNSRecordSet] {
        let format = format ?? self.format()
        let request = try format.request(for: hosts, family: family, now: 0)
        return try format.parse(status: status, body: bytes(body), for: request)
    }

    // MARK: Signatures and requests

    func testLegacySignatureGoldenVectors() {
        XCTAssertEqual(AlibabaFormat.legacySignature(hosts: "www.aliyun.com", secret: "IAmASecret", expiry: 1_534_316_400),
                       "60c71e98b6d7fcbb366243e224eab457")
        // The vendor's batch vector: found by trying the documented "a,b-secret-t" shape with the
        // example names of the same docs; this input reproduces it exactly.
        XCTAssertEqual(AlibabaFormat.legacySignature(hosts: "www.aliyun.com,www.taobao.com", secret: "IAmASecret", expiry: 1_534_316_400),
                       "12a3f6b1b14a46ca813ca6439beb59a4")
    }

    func testLegacyURLs() throws {
        let plain = format()
        XCTAssertEqual(try plain.request(for: ["www.aliyun.com"], family: .ipv4, now: 0).url, "http://203.107.1.1/100000/d?host=www.aliyun.com")
        XCTAssertEqual(try plain.request(for: ["www.aliyun.com"], family: .ipv6, now: 0).url, "http://203.107.1.1/100000/d?host=www.aliyun.com&query=6")
        XCTAssertEqual(try plain.request(for: ["www.aliyun.com"], family: .both, now: 0).url, "http://203.107.1.1/100000/d?host=www.aliyun.com&query=4,6")
        XCTAssertEqual(try plain.request(for: ["a.com", "b.com"], family: .ipv4, now: 0).url, "http://203.107.1.1/100000/resolve?host=a.com,b.com")
        let subnet = format { $0.clientSubnet = "42.120.74.0"; $0.serviceURL = "https://203.107.1.97/" }
        XCTAssertEqual(try subnet.request(for: ["a.com"], family: .ipv4, now: 0).url, "https://203.107.1.97/100000/d?host=a.com&ip=42.120.74.0")

        let signed = format { $0.secret = "IAmASecret" }
        XCTAssertEqual(try signed.request(for: ["www.aliyun.com"], family: .ipv4, now: vendorNow).url,
                       "http://203.107.1.1/100000/sign_d?host=www.aliyun.com&t=1534316400&s=60c71e98b6d7fcbb366243e224eab457")
        XCTAssertEqual(try signed.request(for: ["www.aliyun.com", "www.taobao.com"], family: .ipv4, now: vendorNow).url,
                       "http://203.107.1.1/100000/sign_resolve?host=www.aliyun.com,www.taobao.com&t=1534316400&s=12a3f6b1b14a46ca813ca6439beb59a4")
    }

    func testBatchLimit() throws {
        let hosts = (0..<6).map { "h\($0).com" }
        assertThrowsCode(.unsupported) { try self.format().request(for: hosts, family: .ipv4, now: 0) }
        let split = try format().batchedRequests(for: hosts, family: .ipv4, now: 0)
        XCTAssertEqual(split.map(\.url), [
            "http://203.107.1.1/100000/resolve?host=h0.com,h1.com,h2.com,h3.com,h4.com",
            "http://203.107.1.1/100000/d?host=h5.com",
        ])
        XCTAssertEqual(format { $0.maxBatch = 50 }.maxHostsPerRequest, 5)
    }

    func testV2URLs() throws {
        // echo -n "dn=www.aliyun.com&exp=1534317000&id=100000&m=0&q=4&v=1.0" | openssl dgst -sha256 -hmac IAmASecret
        let v2 = format { $0.api = .v2; $0.secret = "IAmASecret" }
        XCTAssertEqual(try v2.request(for: ["www.aliyun.com"], family: .ipv4, now: 1_534_316_400).url,
                       "http://203.107.1.1/v2/d?id=100000&m=0&exp=1534317000&v=1.0&dn=www.aliyun.com&q=4&s=a2382fdbbe787121f1450f4d9cfcec59c6fbbd69fcf47e1992248b4412a1a6bc")
        XCTAssertEqual(AlibabaFormat.v2Signature(parameters: ["id": "100000", "m": "0", "exp": "1534317000", "v": "1.0", "dn": "www.aliyun.com", "q": "4"], secret: "IAmASecret"),
                       "a2382fdbbe787121f1450f4d9cfcec59c6fbbd69fcf47e1992248b4412a1a6bc")
        // echo -n '{"dn":"www.aliyun.com","q":"4"}' | openssl enc -aes-128-cbc -K 30313233343536373839616263646566 -iv 000102030405060708090a0b0c0d0e0f | xxd -p
        // echo -n "enc=000102030405060708090a0b0c0d0e0f3e18…ed1b&exp=1534317000&id=100000&m=1&v=1.0" | openssl dgst -sha256 -hmac IAmASecret
        var encrypted = v2
        encrypted.configuration.encryptionKey = bytes("0123456789abcdef")
        XCTAssertEqual(try encrypted.request(for: ["www.aliyun.com"], family: .ipv4, now: 1_534_316_400).url,
                       "http://203.107.1.1/v2/d?id=100000&m=1&exp=1534317000&v=1.0&enc=000102030405060708090a0b0c0d0e0f3e189d19841877ef2fee9ea80f9c6489926b5a926876fc5094255c59ded7ed1b&s=c3545d9f521cd7e03676a4104b650cb10b057110739d24784fe92b1e1f8f5ad4")
        assertThrowsCode(.invalidConfiguration) { try self.format { $0.api = .v2 }.request(for: ["a.com"], family: .ipv4, now: 0) }
        assertThrowsCode(.invalidConfiguration) {
            try self.format { $0.api = .v2; $0.secret = "s"; $0.encryptionKey = [1, 2, 3] }.request(for: ["a.com"], family: .ipv4, now: 0)
        }
        assertThrowsCode(.invalidConfiguration) { try AlibabaFormat(configuration: .init(accountID: "10/00")).request(for: ["a.com"], family: .ipv4, now: 0) }
        assertThrowsCode(.invalidConfiguration) { try AlibabaFormat(configuration: .init(accountID: "")).request(for: ["a.com"], family: .ipv4, now: 0) }
    }

    // MARK: Answers

    func testLegacyAnswer() throws {
        let body = #"{"host":"www.aliyun.com","ips":["1.2.3.4","5.6.7.8"],"ipsv6":["2400:3200::1"],"ttl":57,"origin_ttl":120,"client_ip":"42.120.74.1"}"#
        XCTAssertEqual(try parse(body), [HTTPDNSRecordSet(host: "www.aliyun.com", ipv4: [ip("1.2.3.4"), ip("5.6.7.8")], ipv6: [ip("2400:3200::1")], ttl: 57, clientIP: "42.120.74.1")])
        XCTAssertEqual(try parse(#"{"host":"WWW.ALIYUN.COM.","ips":["1.2.3.4"]}"#), [HTTPDNSRecordSet(host: "www.aliyun.com", ipv4: [ip("1.2.3.4")])])
        assertThrowsCode(.noAddress) { try self.parse(#"{"host":"www.aliyun.com","ips":[],"ipsv6":[],"ttl":57}"#) }
        assertThrowsCode(.noAddress) { try self.parse(#"{"host":"www.aliyun.com","ttl":57}"#) }
    }

    func testBatchAnswerMergesTypes() throws {
        let body = #"{"dns":[{"host":"a.com","client_ip":"42.120.74.1","ips":["1.1.1.1"],"type":1,"ttl":106,"origin_ttl":120},"#
            + #"{"host":"b.com","ips":["2.2.2.2"],"type":1,"ttl":100},{"host":"a.com","ips":["2400::1"],"type":28,"ttl":60}]}"#
        XCTAssertEqual(try parse(body, hosts: ["b.com", "a.com"]), [
            HTTPDNSRecordSet(host: "b.com", ipv4: [ip("2.2.2.2")], ttl: 100),
            HTTPDNSRecordSet(host: "a.com", ipv4: [ip("1.1.1.1")], ipv6: [ip("2400::1")], ttl: 60, clientIP: "42.120.74.1"),
        ])
        assertThrowsCode(.malformedAnswer) { try self.parse(#"{"dns":[{"host":"c.com","ips":["1.1.1.1"],"type":1}]}"#, hosts: ["a.com", "b.com"]) }
        assertThrowsCode(.malformedAnswer) { try self.parse(#"{"dns":[{"host":"a.com","ips":["1.1.1.1"],"type":5}]}"#, hosts: ["a.com", "b.com"]) }
        assertThrowsCode(.malformedAnswer) { try self.parse(#"{"dns":[{"host":"a.com","ips":["2400::1"],"type":1}]}"#, hosts: ["a.com", "b.com"]) }
        assertThrowsCode(.malformedAnswer) { try self.parse(#"{"dns":[{"ips":["1.1.1.1"],"type":1}]}"#, hosts: ["a.com", "b.com"]) }
        assertThrowsCode(.noAddress) { try self.parse(#"{"dns":[]}"#, hosts: ["a.com", "b.com"]) }
    }

    func testV2Answers() throws {
        let v2 = format { $0.api = .v2; $0.secret = "IAmASecret" }
        let body = #"{"code":"success","mode":0,"data":{"answers":[{"dn":"a.com","v4":{"ips":["1.1.1.1"],"ttl":60},"v6":{"ips":[],"ttl":60}}]}}"#
        XCTAssertEqual(try parse(body, hosts: ["a.com"], format: v2), [HTTPDNSRecordSet(host: "a.com", ipv4: [ip("1.1.1.1")], ttl: 60)])
        let both = #"{"code":"success","mode":0,"data":{"answers":[{"dn":"b.com","v4":{"ips":["2.2.2.2"],"ttl":300},"v6":{"ips":["2400::2"],"ttl":30}},{"dn":"a.com","v6":{"ips":["2400::1"],"ttl":60}}]}}"#
        XCTAssertEqual(try parse(both, hosts: ["a.com", "b.com"], format: v2), [
            HTTPDNSRecordSet(host: "a.com", ipv6: [ip("2400::1")], ttl: 60),
            HTTPDNSRecordSet(host: "b.com", ipv4: [ip("2.2.2.2")], ipv6: [ip("2400::2")], ttl: 30),
        ])
        // m=1: data = hex(IV ‖ AES-128-CBC(key, JSON)).
        // echo -n '{"answers":[{"dn":"a.com","v4":{"ips":["1.1.1.1"],"ttl":60}}]}' | openssl enc -aes-128-cbc \
        //   -K 30313233343536373839616263646566 -iv 000102030405060708090a0b0c0d0e0f | xxd -p
        var encrypted = v2
        encrypted.configuration.encryptionKey = bytes("0123456789abcdef")
        let data = "000102030405060708090a0b0c0d0e0f" + "2936d105eda60978195dfe695c77bb61345373ad30c7b14f50161b29bf373c3c1a03398d8f4f2b0ebc6cdef576eb60084bccd72eacfdd59a3462f4fe10d567cc"
        XCTAssertEqual(try parse(#"{"code":"success","mode":1,"data":"\#(data)"}"#, hosts: ["a.com"], format: encrypted),
                       [HTTPDNSRecordSet(host: "a.com", ipv4: [ip("1.1.1.1")], ttl: 60)])
        assertThrowsCode(.malformedAnswer) { try self.parse(#"{"code":"success","mode":1,"data":"\#(data)"}"#, hosts: ["a.com"], format: v2) }
        assertThrowsCode(.malformedAnswer) { try self.parse(#"{"code":"success","mode":1,"data":"00ff"}"#, hosts: ["a.com"], format: encrypted) }
        assertThrowsCode(.malformedAnswer) { try self.parse(#"{"code":"success","mode":0,"data":{}}"#, hosts: ["a.com"], format: v2) }
        assertThrowsCode(.noAddress) { try self.parse(#"{"code":"success","mode":0,"data":{"answers":[{"dn":"a.com"}]}}"#, hosts: ["a.com"], format: v2) }
    }

    func testErrorBodies() {
        assertThrowsCode(.unauthorized) { try self.parse(#"{"code":"InvalidSignature"}"#, status: 403) }
        assertThrowsCode(.unauthorized) { try self.parse(#"{"code":"SignatureExpired"}"#, status: 403) }
        assertThrowsCode(.unauthorized) { try self.parse(#"{"code":"InvalidAccount"}"#, status: 404) }
        assertThrowsCode(.unsupported) { try self.parse(#"{"code":"LimitExceeded"}"#, status: 400) }
        assertThrowsCode(.invalidHost) { try self.parse(#"{"code":"InvalidHost"}"#, status: 400) }
        assertThrowsCode(.unauthorized) { try self.parse(#"{"code":"InvalidSignature"}"#) }
        assertThrowsCode(.unauthorized) { try self.parse(#"{"code":"SomethingNew"}"#, status: 403) }
        assertThrowsCode(.httpStatus) { try self.parse(#"{"code":"SomethingNew"}"#, status: 500) }
        assertThrowsCode(.malformedAnswer) { try self.parse(#"{"code":"SomethingNew"}"#) }
        assertThrowsCode(.httpStatus) { try self.parse("", status: 502) }
        assertThrowsCode(.unauthorized) { try self.parse("<html>", status: 401) }
    }

    func testMalformedAnswers() {
        let junk = [
            "", "null", "[]", "\"x\"", "{", #"{"host":"www.aliyun.com","ips":"1.2.3.4"}"#,
            #"{"host":"www.aliyun.com","ips":["1.2.3"]}"#, #"{"host":"www.aliyun.com","ips":[1234]}"#,
            #"{"host":"www.aliyun.com","ips":["2400::1"]}"#, #"{"host":"www.aliyun.com","ipsv6":["1.2.3.4"]}"#,
            #"{"host":"www.aliyun.com","ips":["1.2.3.4"],"ttl":"57"}"#, #"{"host":"www.aliyun.com","ips":["1.2.3.4"],"ttl":-1}"#,
            #"{"host":"www.aliyun.com","ips":["1.2.3.4"],"ttl":57.5}"#, #"{"host":"www.aliyun.com","ips":["1.2.3.4"],"ttl":1e3}"#,
            #"{"host":"www.aliyun.com","ips":["1.2.3.4"],"ttl":99999999999999999999999}"#,
            #"{"host":"www.aliyun.com","ips":["1.2.3.4"],"ttl":2147483648}"#,
            #"{"host":"evil.com","ips":["1.2.3.4"]}"#, #"{"host":42,"ips":["1.2.3.4"]}"#,
            #"{"host":"www.aliyun.com","ips":["1.2.3.4"],"ips":["6.6.6.6"]}"#,
            #"{"host":"www.aliyun.com","ips":["1.2.3.4"],"client_ip":"nope"}"#,
            #"{"host":"www.aliyun.com","ips":["1.2.3.4"]} x"#, #"{"host":"www.aliyun.com","ips":["1.2.3.4",]}"#,
            #"{"host":"www.aliyun.com","ips":[" 1.2.3.4"]}"#,
        ]
        for body in junk {
            assertThrowsCode(.malformedAnswer, body) { try self.parse(body) }
        }
        let many = "{\"host\":\"www.aliyun.com\",\"ips\":[" + (0..<65).map { "\"1.1.1.\($0)\"" }.joined(separator: ",") + "]}"
        assertThrowsCode(.malformedAnswer) { try self.parse(many) }
        let huge = "{\"host\":\"www.aliyun.com\",\"pad\":\"" + String(repeating: "x", count: 70 * 1024) + "\",\"ips\":[\"1.2.3.4\"]}"
        assertThrowsCode(.malformedAnswer) { try self.parse(huge) }
        assertThrowsCode(.malformedAnswer) { try self.parse(huge, status: 403) }
    }

    func testFuzz() throws {
        let legacy = try format().request(for: ["www.aliyun.com"], family: .both, now: 0)
        let body = bytes(#"{"host":"www.aliyun.com","ips":["1.2.3.4","5.6.7.8"],"ipsv6":["2400:3200::1"],"ttl":57,"origin_ttl":120,"client_ip":"42.120.74.1"}"#)
        XCTAssertGreaterThan(fuzz(body, seed: 21) { try self.format().parse(status: 200, body: $0, for: legacy) }.rejected, 100)
        let batch = try format().request(for: ["a.com", "b.com"], family: .both, now: 0)
        let batchBody = bytes(#"{"dns":[{"host":"a.com","client_ip":"42.120.74.1","ips":["1.1.1.1"],"type":1,"ttl":106},{"host":"b.com","ips":["2400::1"],"type":28,"ttl":60}]}"#)
        XCTAssertGreaterThan(fuzz(batchBody, seed: 22) { try self.format().parse(status: 200, body: $0, for: batch) }.rejected, 100)
        let v2 = format { $0.api = .v2; $0.secret = "s" }
        let v2Request = try v2.request(for: ["a.com"], family: .both, now: 0)
        let v2Body = bytes(#"{"code":"success","mode":0,"data":{"answers":[{"dn":"a.com","v4":{"ips":["1.1.1.1"],"ttl":60},"v6":{"ips":["2400::1"],"ttl":60}}]}}"#)
        XCTAssertGreaterThan(fuzz(v2Body, seed: 23) { try v2.parse(status: 200, body: $0, for: v2Request) }.rejected, 100)
    }
}
