import DNSWire
import Foundation
import DNSZoneTransfer
import HTTPDNSCore
import XCTest

/// The key forms operators paste: dig/kdig/knsupdate `-y` and BIND `key` clauses.
final class DNSTSIGKeyTests: XCTestCase {
    private let secret = "nrlFzrWOJ5SxpTUBZnRDCFA1MfaLoabL+rNBXYHm9Nk="

    private func assertKeyError(
        _ code: DNSTSIGError.Code, file: StaticString = #filePath, line: UInt = #line, _ body: () throws -> Void
    ) {
        XCTAssertThrowsError(try body(), file: file, line: line) { error in
            XCTAssertEqual((error as? DNSTSIGError)?.code, code, "\(error)", file: file, line: line)
        }
    }

    func testCommandLineForms() throws {
        let expected = try DNSTSIGKey(name: try DNSName("xfr.example"), secret: Array(Data(base64Encoded: secret) ?? Data()))
        XCTAssertEqual(try DNSTSIGKey(commandLine: "hmac-sha256:xfr.example:\(secret)"), expected)
        XCTAssertEqual(try DNSTSIGKey(commandLine: "xfr.example:hmac-sha256:\(secret)"), expected)
        XCTAssertEqual(try DNSTSIGKey(commandLine: "xfr.example.:HMAC-SHA256.:\(secret)"), expected)
        XCTAssertEqual(try DNSTSIGKey(commandLine: "xfr.example:\(secret)"), expected)
        XCTAssertEqual(expected.secret.count, 32)
        XCTAssertFalse(expected.description.contains(secret))
    }

    func testCommandLineRefusals() {
        assertKeyError(.unsupportedAlgorithm) { _ = try DNSTSIGKey(commandLine: "hmac-md5:xfr.example:\(self.secret)") }
        assertKeyError(.unsupportedAlgorithm) { _ = try DNSTSIGKey(commandLine: "xfr.example:hmac-sha1:\(self.secret)") }
        assertKeyError(.invalidKey) { _ = try DNSTSIGKey(commandLine: "xfr.example:not base64!") }
        assertKeyError(.invalidKey) { _ = try DNSTSIGKey(commandLine: "xfr.example:") }
        assertKeyError(.invalidKey) { _ = try DNSTSIGKey(commandLine: "\(self.secret)") }
        assertKeyError(.invalidKey) { _ = try DNSTSIGKey(commandLine: "a:b:c:d") }
        assertKeyError(.invalidKey) { _ = try DNSTSIGKey(commandLine: "xfr..example:\(self.secret)") }
        assertKeyError(.invalidKey) { _ = try DNSTSIGKey(commandLine: "one:two:\(self.secret)") }
    }

    func testBINDKeyClauseAsTsigKeygenPrintsIt() throws {
        // The layout of `tsig-keygen -a hmac-sha256 xfr.example` (BIND 9.18).
        let text = """
        key "xfr.example" {
        \talgorithm hmac-sha256;
        \tsecret "\(secret)";
        };
        """
        let keys = try DNSTSIGKey.parseBINDKeys(text)
        XCTAssertEqual(keys.count, 1)
        XCTAssertEqual(keys.first?.name, try DNSName("xfr.example"))
        XCTAssertEqual(keys.first?.secret, Array(Data(base64Encoded: secret) ?? Data()))
    }

    func testBINDKeyClausesWithCommentsAndSeveralKeys() throws {
        let text = """
        # transfer keys
        key xfr-a.example. { secret "\(secret)"; algorithm "hmac-sha256"; }; // first
        /* second,
           spread over lines */
        key "xfr-b.example" {algorithm hmac-sha256;secret "\(secret)";};
        """
        let keys = try DNSTSIGKey.parseBINDKeys(text)
        XCTAssertEqual(keys.map(\.name), [try DNSName("xfr-a.example"), try DNSName("xfr-b.example")])
    }

    func testBINDKeyClauseRefusals() {
        let good = "algorithm hmac-sha256; secret \"\(secret)\";"
        assertKeyError(.invalidKey) { _ = try DNSTSIGKey.parseBINDKeys("") }
        assertKeyError(.invalidKey) { _ = try DNSTSIGKey.parseBINDKeys("key \"k\" { \(good) }") }  // no final ;
        assertKeyError(.invalidKey) { _ = try DNSTSIGKey.parseBINDKeys("key \"k\" { secret \"\(self.secret)\"; };") }
        assertKeyError(.invalidKey) { _ = try DNSTSIGKey.parseBINDKeys("key \"k\" { algorithm hmac-sha256; };") }
        assertKeyError(.invalidKey) { _ = try DNSTSIGKey.parseBINDKeys("key \"k\" { \(good) secret \"\(self.secret)\"; };") }
        assertKeyError(.invalidKey) { _ = try DNSTSIGKey.parseBINDKeys("key \"k\" { \(good) port 53; };") }
        assertKeyError(.invalidKey) { _ = try DNSTSIGKey.parseBINDKeys("zone \"k\" { \(good) };") }
        assertKeyError(.invalidKey) { _ = try DNSTSIGKey.parseBINDKeys("key \"k\" { \(good) }; extra") }
        assertKeyError(.invalidKey) { _ = try DNSTSIGKey.parseBINDKeys("key \"k { \(good) };") }
        assertKeyError(.invalidKey) { _ = try DNSTSIGKey.parseBINDKeys("/* key \"k\" { \(good) };") }
        assertKeyError(.unsupportedAlgorithm) {
            _ = try DNSTSIGKey.parseBINDKeys("key \"k\" { algorithm hmac-sha512; secret \"\(self.secret)\"; };")
        }
        assertKeyError(.invalidKey) {
            _ = try DNSTSIGKey.parseBINDKeys("key \"k\" { algorithm hmac-sha256; secret \"***\"; };")
        }
    }

    func testEveryTruncationOfAKeyClauseFails() {
        let text = "key \"xfr.example\" { algorithm hmac-sha256; secret \"\(secret)\"; };"
        let bytes = Array(text.utf8)
        for length in 0..<bytes.count {
            let cut = String(decoding: bytes.prefix(length), as: UTF8.self)
            XCTAssertThrowsError(try DNSTSIGKey.parseBINDKeys(cut), "length \(length)")
        }
        XCTAssertNoThrow(try DNSTSIGKey.parseBINDKeys(text))
    }
}
