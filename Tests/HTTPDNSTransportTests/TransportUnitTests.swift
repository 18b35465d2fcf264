import CCurl
import Foundation
import HTTPDNSCore
@testable import HTTPDNSTransport
import XCTest

final class TransportUnitTests: XCTestCase {
    func testPinningEntriesEncodeTheExactList() throws {
        let two = try XCTUnwrap(HTTPDNSIPAddress("127.0.0.2"))
        let three = try XCTUnwrap(HTTPDNSIPAddress("127.0.0.3"))
        let six = try XCTUnwrap(HTTPDNSIPAddress("2001:db8::1"))
        let entries = try XCTUnwrap(CurlPinning.entries(port: 8443, addresses: [two, six]))
        XCTAssertEqual(entries.connectTo, "::7f000002.20010db8000000000000000000000001.pin.httpdns.invalid:8443")
        XCTAssertEqual(
            entries.resolve, "7f000002.20010db8000000000000000000000001.pin.httpdns.invalid:8443:127.0.0.2,[2001:db8::1]")
        // Different lists (or orders) never share a name.
        let names = Set([[two], [three], [two, three], [three, two]].map {
            CurlPinning.entries(port: 80, addresses: $0)!.connectTo
        })
        XCTAssertEqual(names.count, 4)
        XCTAssertNil(CurlPinning.entries(port: 80, addresses: []))
    }

    func testPinningEntriesKeptFromTheLastRequestAnswerOnlyTheSameListAndPort() throws {
        let two = try XCTUnwrap(HTTPDNSIPAddress("127.0.0.2"))
        let three = try XCTUnwrap(HTTPDNSIPAddress("127.0.0.3"))
        let first = try XCTUnwrap(CurlPinning.entries(port: 80, addresses: [two]))
        XCTAssertEqual(first.resolve, "7f000002.pin.httpdns.invalid:80:127.0.0.2")
        XCTAssertEqual(CurlPinning.entries(port: 80, addresses: [two]), first)
        // The port alone, the list alone and the order alone each get entries of their own.
        XCTAssertEqual(CurlPinning.entries(port: 443, addresses: [two])?.resolve, "7f000002.pin.httpdns.invalid:443:127.0.0.2")
        XCTAssertEqual(CurlPinning.entries(port: 443, addresses: [three])?.resolve, "7f000003.pin.httpdns.invalid:443:127.0.0.3")
        XCTAssertEqual(
            CurlPinning.entries(port: 443, addresses: [three, two])?.resolve,
            "7f000003.7f000002.pin.httpdns.invalid:443:127.0.0.3,127.0.0.2")
        XCTAssertEqual(
            CurlPinning.entries(port: 443, addresses: [two, three])?.connectTo, "::7f000002.7f000003.pin.httpdns.invalid:443")
        XCTAssertNil(CurlPinning.entries(port: 443, addresses: []))
        XCTAssertEqual(CurlPinning.entries(port: 80, addresses: [two]), first)
    }

    func testPinningNameStaysWithinLibcurlLimits() throws {
        let many = (1...40).map { HTTPDNSIPAddress(bytes: [32, 1, 13, 184] + Array(repeating: 0, count: 11) + [UInt8($0)])! }
        let entries = try XCTUnwrap(CurlPinning.entries(port: 443, addresses: many))
        let name = entries.resolve.split(separator: ":").first.map(String.init) ?? ""
        XCTAssertLessThanOrEqual(name.utf8.count, CurlPinning.maxNameLength)
        XCTAssertEqual(entries.addresses, Array(many.prefix(entries.addresses.count)))
        XCTAssertGreaterThanOrEqual(entries.addresses.count, 6)
    }

    func testCurlCodeMapping() {
        XCTAssertEqual(CurlTransfer.errorCode(for: CURLE_COULDNT_RESOLVE_HOST), .cannotFindHost)
        XCTAssertEqual(CurlTransfer.errorCode(for: CURLE_COULDNT_CONNECT), .cannotConnectToHost)
        XCTAssertEqual(CurlTransfer.errorCode(for: CURLE_OPERATION_TIMEDOUT), .timedOut)
        XCTAssertEqual(CurlTransfer.errorCode(for: CURLE_PEER_FAILED_VERIFICATION), .serverCertificateUntrusted)
        XCTAssertEqual(CurlTransfer.errorCode(for: CURLE_SSL_CONNECT_ERROR), .secureConnectionFailed)
        for code in [CURLE_RECV_ERROR, CURLE_SEND_ERROR, CURLE_GOT_NOTHING, CURLE_PARTIAL_FILE] {
            XCTAssertEqual(CurlTransfer.errorCode(for: code), .networkConnectionLost)
        }
        XCTAssertEqual(CurlTransfer.errorCode(for: CURLE_FILESIZE_EXCEEDED), .responseTooLarge)
        XCTAssertEqual(CurlTransfer.errorCode(for: CURLE_URL_MALFORMAT), .badURL)
        XCTAssertEqual(CurlTransfer.errorCode(for: CURLE_OUT_OF_MEMORY), .unknown)
    }

    /// `localizedDescription` is a sentence for people (no code names, no libcurl text); the detail
    /// rides under `NSDebugDescription`.
    func testURLErrorCarriesASentenceAndTheDetail() {
        let error = HTTPTransportError(.cannotFindHost, "no such name", curlCode: 6, host: "a.test")
        XCTAssertEqual(error.urlError.code, .cannotFindHost)
        XCTAssertEqual(error.urlError.localizedDescription, "The address of a.test could not be found.")
        XCTAssertEqual(error.urlError.userInfo["NSDebugDescription"] as? String, error.description)
        XCTAssertTrue(error.description.contains("curl 6") && error.description.contains("no such name"), error.description)
    }

    /// The same split for resolution errors: a sentence in `localizedDescription`, the attempts in
    /// `debugDescription`.
    func testHTTPDNSErrorSentenceAndDetail() {
        let attempt = HTTPDNSError.Attempt(source: "dnspod http://127.0.0.1:1", error: HTTPDNSError(.timedOut, "no answer within 1.5 s"))
        let error = HTTPDNSError(.allAttemptsFailed, "every provider failed", host: "api.example.com", attempts: [attempt])
        XCTAssertEqual(error.localizedDescription, "The name “api.example.com” could not be resolved.")
        XCTAssertFalse(error.localizedDescription.contains("allAttemptsFailed"))
        XCTAssertTrue(error.debugDescription.contains("allAttemptsFailed"), error.debugDescription)
        XCTAssertTrue(error.debugDescription.contains("no answer within 1.5 s"), error.debugDescription)
        XCTAssertEqual(HTTPDNSError(.nameNotFound, "NXDOMAIN", host: "x.test").localizedDescription, "The name “x.test” does not exist.")
    }

    /// Every code's `localizedDescription` is a sentence an app can show (`DirectClient.md`, "Errors"): a capital
    /// first and a full stop last, with and without a host, so a new code without one fails here.
    func testEveryTransportErrorCodeHasASentence() {
        XCTAssertFalse(HTTPTransportError.Code.allCases.isEmpty)
        for code in HTTPTransportError.Code.allCases {
            for host in ["a.test", "example.com.", nil] as [String?] {
                let sentence = HTTPTransportError(code, "libcurl's text", curlCode: 7, host: host).urlError.localizedDescription
                XCTAssertTrue(sentence.first?.isUppercase == true, "\(code): \(sentence)")
                XCTAssertTrue(sentence.hasSuffix("."), "\(code): \(sentence)")
                XCTAssertFalse(sentence.contains("libcurl's text"), "\(code): \(sentence)")
            }
        }
    }

    func testTimeoutConversion() {
        XCTAssertEqual(CurlTransfer.milliseconds(.seconds(10)), 10_000)
        XCTAssertEqual(CurlTransfer.milliseconds(.milliseconds(250)), 250)
        XCTAssertEqual(CurlTransfer.milliseconds(.zero), 1)
        XCTAssertEqual(CurlTransfer.milliseconds(.seconds(-5)), 1)
    }
}

final class CurlPinningMessageTests: XCTestCase {
    func testErrorMessagesNameTheRealHostNotTheSyntheticOne() throws {
        let addresses = [HTTPDNSIPAddress("127.0.0.2")!, HTTPDNSIPAddress("::1")!]
        let entries = try XCTUnwrap(CurlPinning.entries(port: 443, addresses: addresses))
        let name = String(entries.resolve.prefix { $0 != ":" })
        let message = "Failed to connect to \(name) port 443 after 0 ms: Couldn't connect to server"
        let readable = CurlPinning.humanize(message, host: "www.example.test", addresses: addresses)
        XCTAssertEqual(readable, "Failed to connect to www.example.test (127.0.0.2, ::1) port 443 after 0 ms: Couldn't connect to server")
        XCTAssertEqual(CurlPinning.humanize("plain message", host: "h", addresses: addresses), "plain message")
    }
}

final class CurlHeaderTextTests: XCTestCase {
    func testTrimmedDropsOnlySpacesAndTabsAtTheEnds() {
        func trimmed(_ text: String) -> String {
            Array(text.utf8).withUnsafeBytes { CurlTransfer.trimmed($0) }
        }
        XCTAssertEqual(trimmed("  \tvalue with  inner space\t "), "value with  inner space")
        XCTAssertEqual(trimmed(""), "")
        XCTAssertEqual(trimmed(" \t "), "")
        XCTAssertEqual(trimmed("ü"), "ü")
        XCTAssertEqual(trimmed("\u{FF}"), "\u{FF}")
    }
}
