import Foundation
import HTTPDNSTransport
import XCTest
@testable import HTTPDNSDirect
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The transport's head made into the `HTTPURLResponse` callers get: repeated fields joined in
/// order under the first spelling, as Foundation does, whether the head is short (compared name by
/// name) or long (folded names in a table); a head that repeats the last one gets its response.
final class ResponseHeadTests: XCTestCase {
    private let url = URL(string: "https://www.example.test/path")!

    private func head(_ headers: [(String, String)], status: Int = 200, version: String = "2") -> HTTPTransportResponseHead {
        HTTPTransportResponseHead(
            statusCode: status, headers: headers.map { HTTPTransportHeader(name: $0.0, value: $0.1) }, connectedAddress: nil,
            httpVersion: version)
    }

    func testRepeatedFieldsAreJoinedInOrderUnderTheFirstSpelling() {
        let response = HTTPDNSClient.makeResponse(
            head([("content-type", "text/plain"), ("Vary", "Accept"), ("VARY", "Origin"), ("vary", "Cookie"), ("X-One", "1")]),
            url: url)
        XCTAssertEqual(response.value(forHTTPHeaderField: "Vary"), "Accept, Origin, Cookie")
        XCTAssertEqual(response.value(forHTTPHeaderField: "Content-Type"), "text/plain")
        XCTAssertEqual(response.value(forHTTPHeaderField: "x-one"), "1")
        XCTAssertEqual(response.allHeaderFields.count, 3)
        XCTAssertEqual(response.url, url)
        XCTAssertEqual(response.statusCode, 200)
        XCTAssertEqual(response.mimeType, "text/plain")
    }

    func testALongHeadGivesWhatTheShortPathWouldGive() {
        // 40 fields: past the name-by-name comparison; every tenth repeats an earlier name in
        // another case.
        var fields: [(String, String)] = []
        for index in 0..<40 {
            fields.append(index % 10 == 9 ? ("FIELD-\(index - 9)", "again \(index)") : ("Field-\(index)", "value \(index)"))
        }
        let long = HTTPDNSClient.makeResponse(head(fields), url: url)
        XCTAssertEqual(long.allHeaderFields.count, 36)
        XCTAssertEqual(long.value(forHTTPHeaderField: "field-0"), "value 0, again 9")
        XCTAssertEqual(long.value(forHTTPHeaderField: "Field-30"), "value 30, again 39")
        // The same fields 16 at a time (the short path) agree with the long head's figures.
        for start in stride(from: 0, to: 40, by: 10) {
            let short = HTTPDNSClient.makeResponse(head(Array(fields[start..<(start + 10)])), url: url)
            for (name, _) in fields[start..<(start + 10)] {
                XCTAssertEqual(short.value(forHTTPHeaderField: name), long.value(forHTTPHeaderField: name), name)
            }
        }
    }

    func testARepeatedHeadGetsTheResponseMadeForItAndAnyDifferenceANewOne() {
        let memo = ResponseMemo()
        let fields = [("Content-Type", "text/plain"), ("Date", "Mon, 07 Dec 2026 18:00:00 GMT"), ("Content-Length", "5")]
        let first = memo.response(for: head(fields), url: url)
        XCTAssertTrue(memo.response(for: head(fields), url: url) === first)
        XCTAssertEqual(first.value(forHTTPHeaderField: "date"), "Mon, 07 Dec 2026 18:00:00 GMT")

        // Each difference, alone: a value, a name's spelling, the order, a field more, the status,
        // the version, the URL. Each gets a response of its own, made from its own head.
        var later = fields
        later[1].1 = "Mon, 07 Dec 2026 18:00:01 GMT"
        var spelled = fields
        spelled[2].0 = "content-length"
        let variants: [(String, HTTPTransportResponseHead, URL)] = [
            ("value", head(later), url),
            ("spelling", head(spelled), url),
            ("order", head(fields.reversed()), url),
            ("field more", head(fields + [("X-Request-Id", "7")]), url),
            ("status", head(fields, status: 203), url),
            ("version", head(fields, version: "1.1"), url),
            ("url", head(fields), URL(string: "https://www.example.test/other")!),
        ]
        var previous = first
        for (difference, variant, variantURL) in variants {
            let made = memo.response(for: variant, url: variantURL)
            XCTAssertFalse(made === previous, difference)
            let expected = HTTPDNSClient.makeResponse(variant, url: variantURL)
            XCTAssertEqual(made.url, expected.url, difference)
            XCTAssertEqual(made.statusCode, expected.statusCode, difference)
            XCTAssertEqual(made.allHeaderFields as? [String: String], expected.allHeaderFields as? [String: String], difference)
            // The new head now holds the slot.
            XCTAssertTrue(memo.response(for: variant, url: variantURL) === made, difference)
            previous = made
        }
        XCTAssertEqual(previous.url?.path, "/other")
        XCTAssertFalse(memo.response(for: head(fields), url: url) === first, "the slot holds only the last head")
    }
}
