import Foundation
import HTTPDNSTransport
import XCTest
@testable import HTTPDNSDirect
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The transport's head made into the `HTTPURLResponse` callers get: repeated fields joined in
/// order under the first spelling, as Foundation does, whether the head is short (compared name by
/// name) or long (folded names in a table).
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
}
