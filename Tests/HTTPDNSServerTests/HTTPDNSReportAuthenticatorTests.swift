import HTTPDNSCore
import HTTPDNSServer
import XCTest

/// Report credentials (``HTTPDNSReportCredential``, ``HTTPDNSReportAuthenticator``): the header forms,
/// a golden signature, and every way a credential is refused.
final class HTTPDNSReportAuthenticatorTests: XCTestCase {
    static let body = Array(HTTPDNSReportBatchTests.example.utf8)
    static let now: Double = 1_796_300_000
    let authenticator = HTTPDNSReportAuthenticator(tokens: ["s3cret-Token_1"], secrets: ["100000": ["IAmASecret"], "200": ["", "other"]])

    /// Golden vector, computed independently with Python's `hmac` module:
    /// `hmac.new(b"IAmASecret", b"100000\n1796300600\n" + body, hashlib.sha256).hexdigest()`.
    func testTheSignatureMatchesAnIndependentComputation() {
        XCTAssertEqual(
            HTTPDNSReportCredential.signature(account: "100000", expires: 1_796_300_600, body: Self.body, secret: "IAmASecret"),
            "ed1dccbb7d6acca6e746ea63bc79e1609a92d96d11bda9a1a60449493c29d3bc")
    }

    func testHeaderForms() {
        XCTAssertEqual(HTTPDNSReportCredential(header: "Bearer abc.DEF-_~+/="), .bearer("abc.DEF-_~+/="))
        XCTAssertEqual(HTTPDNSReportCredential(header: "bearer   tok"), .bearer("tok"))
        let signature = String(repeating: "0a", count: 32)
        let expected = HTTPDNSReportCredential.signed(account: "100000", expires: 42, signature: Array(repeating: 0x0a, count: 32))
        XCTAssertEqual(HTTPDNSReportCredential(header: "HTTPDNS-HMAC-SHA256 account=100000, expires=42, signature=\(signature)"), expected)
        XCTAssertEqual(HTTPDNSReportCredential(header: "httpdns-hmac-sha256 signature=\(signature),expires=42 ,  account=100000"), expected)
        for bad in [
            "", "Bearer", "Bearer ", "Bearer a b", "Bearer tök", "Basic dXNlcjpwYXNz", "Bearertok",
            "HTTPDNS-HMAC-SHA256 account=100000, expires=42",
            "HTTPDNS-HMAC-SHA256 account=100000, expires=42, signature=\(signature.uppercased())",
            "HTTPDNS-HMAC-SHA256 account=100000, expires=42, signature=\(signature.dropLast())",
            "HTTPDNS-HMAC-SHA256 account=100000, expires=-42, signature=\(signature)",
            "HTTPDNS-HMAC-SHA256 account=100000, expires=4 2, signature=\(signature)",
            "HTTPDNS-HMAC-SHA256 account=100000, account=100001, expires=42, signature=\(signature)",
            "HTTPDNS-HMAC-SHA256 account=100000, expires=42, signature=\(signature), extra=1",
            "HTTPDNS-HMAC-SHA256 account=10 0000, expires=42, signature=\(signature)",
            "HTTPDNS-HMAC-SHA256 account=, expires=42, signature=\(signature)",
            "HTTPDNS-HMAC-SHA256 account=100000, expires=9999999999999999999, signature=\(signature)",
            "HTTPDNS-HMAC-SHA256 account=100000,, expires=42, signature=\(signature)",
            "Bearer " + String(repeating: "a", count: 2_000),
        ] {
            XCTAssertNil(HTTPDNSReportCredential(header: bad), bad)
        }
    }

    private func verify(_ header: String?, body: [UInt8] = HTTPDNSReportAuthenticatorTests.body, now: Double = HTTPDNSReportAuthenticatorTests.now) -> HTTPDNSReportAuthenticator.Verdict {
        authenticator.verify(authorization: header, body: body, now: now)
    }

    private func signed(account: String = "100000", expires: Int64 = 1_796_300_600, secret: String = "IAmASecret", body: [UInt8] = HTTPDNSReportAuthenticatorTests.body) -> String {
        HTTPDNSReportCredential.signedHeader(account: account, expires: expires, body: body, secret: secret)
    }

    func testTokensAndSignaturesThatMatchAreAccepted() {
        XCTAssertEqual(verify("Bearer s3cret-Token_1"), .accepted(principal: "token"))
        XCTAssertEqual(verify(signed()), .accepted(principal: "account:100000"))
        // Expiry may be now, or up to an hour ahead.
        XCTAssertEqual(verify(signed(expires: 1_796_300_000)), .accepted(principal: "account:100000"))
        XCTAssertEqual(verify(signed(expires: 1_796_303_600)), .accepted(principal: "account:100000"))
        // An account known with an empty secret and a real one: only the real one signs.
        XCTAssertEqual(verify(signed(account: "200", secret: "other")), .accepted(principal: "account:200"))
        XCTAssertEqual(verify(signed(account: "200", secret: "")), .forbidden("wrong signature"))
    }

    func testMissingUnreadableWrongExpiredAndUnknownAreRefused() {
        XCTAssertEqual(verify(nil), .unauthorized("missing credential"))
        XCTAssertEqual(verify("Digest x"), .unauthorized("unreadable credential"))
        XCTAssertEqual(verify("Bearer s3cret-Token_2"), .forbidden("wrong token"))
        XCTAssertEqual(verify("Bearer s3cret-Token_1x"), .forbidden("wrong token"))
        XCTAssertEqual(verify(signed(secret: "IAmASecreT")), .forbidden("wrong signature"))
        XCTAssertEqual(verify(signed(account: "100001")), .forbidden("unknown account"))
        XCTAssertEqual(verify(signed(expires: 1_796_299_999)), .forbidden("expired"))
        XCTAssertEqual(verify(signed(expires: 1_796_303_601)), .forbidden("expiry too far ahead"))
        // The signature covers the body: one byte changed, or the signature of another body.
        var tampered = Self.body
        tampered[tampered.count - 3] ^= 1
        XCTAssertEqual(verify(signed(), body: tampered), .forbidden("wrong signature"))
        // And the account and expiry: moving the expiry keeps nothing valid.
        let header = signed().replacingOccurrences(of: "expires=1796300600", with: "expires=1796300601")
        XCTAssertEqual(verify(header), .forbidden("wrong signature"))
    }

    func testNoCredentialConfiguredAcceptsNothing() {
        let none = HTTPDNSReportAuthenticator(tokens: ["", ""], secrets: ["1": [""]])
        XCTAssertFalse(none.acceptsAnything)
        XCTAssertEqual(none.verify(authorization: "Bearer x", body: [], now: 0), .forbidden("wrong token"))
        XCTAssertEqual(
            none.verify(authorization: HTTPDNSReportCredential.signedHeader(account: "1", expires: 10, body: [], secret: ""), body: [], now: 0),
            .forbidden("unknown account"))
    }

    func testTheServiceAccountsAreTheSigners() {
        var alibaba = HTTPDNSService.Alibaba()
        alibaba.secrets = ["139450": "ali-secret"]
        var dnspod = HTTPDNSService.DNSPod()
        dnspod.accountKeys = ["6789": "pod-key", "139450": "pod-key-2"]
        let authenticator = HTTPDNSReportAuthenticator(tokens: [], alibaba: alibaba, dnspod: dnspod)
        for (account, secret) in [("139450", "ali-secret"), ("6789", "pod-key"), ("139450", "pod-key-2")] {
            let header = HTTPDNSReportCredential.signedHeader(account: account, expires: 100, body: Self.body, secret: secret)
            XCTAssertEqual(authenticator.verify(authorization: header, body: Self.body, now: 50), .accepted(principal: "account:\(account)"))
        }
    }
}
