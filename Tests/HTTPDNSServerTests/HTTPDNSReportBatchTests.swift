import HTTPDNSCore
import HTTPDNSServer
import XCTest

/// The `POST /report` body (``HTTPDNSReportBatch``): the contract's example, every truncation, and
/// each way an item can be wrong.
final class HTTPDNSReportBatchTests: XCTestCase {
    static let example = #"{"reports":[{"host":"www.example.test","address":"192.0.2.1","port":443,"error":"connect-timeout","time":1796300000}]}"#

    private func parse(_ text: String) throws(HTTPDNSReportBatch.ParseError) -> HTTPDNSReportBatch {
        try HTTPDNSReportBatch.parse(Array(text.utf8))
    }

    private func assertRefused(_ text: String, _ code: HTTPDNSReportBatch.ParseError.Code, mentioning: String? = nil, line: UInt = #line) {
        do {
            let batch = try parse(text)
            XCTFail("accepted \(batch)", line: line)
        } catch {
            XCTAssertEqual(error.code, code, error.detail, line: line)
            if let mentioning { XCTAssertTrue(error.detail.contains(mentioning), error.detail, line: line) }
        }
    }

    func testTheContractExampleReads() throws {
        let batch = try parse(Self.example)
        XCTAssertEqual(batch.items, [HTTPDNSReportBatch.Item(
            host: "www.example.test", address: HTTPDNSIPAddress("192.0.2.1")!, port: 443, error: .connectTimeout, time: 1_796_300_000)])
    }

    func testEveryErrorClassNamesAHostAndIPv6AndMappedAddressesRead() throws {
        let items = HTTPDNSReportBatch.Failure.allCases.enumerated().map { index, failure in
            #"{"host":"WWW.Example.Test.","address":"\#(index % 2 == 0 ? "2001:db8::\(index + 1)" : "::ffff:192.0.2.\(index)")","port":\#(index + 1),"error":"\#(failure.rawValue)","time":0}"#
        }
        let batch = try parse(#"{"reports":["# + items.joined(separator: ",") + "]}")
        XCTAssertEqual(batch.items.map(\.error), HTTPDNSReportBatch.Failure.allCases)
        XCTAssertEqual(batch.items.map(\.host), Array(repeating: "www.example.test", count: 6))
        XCTAssertEqual(batch.items[0].address, HTTPDNSIPAddress("2001:db8::1"))
        // An IPv4-mapped address counts as the IPv4 address it carries.
        XCTAssertEqual(batch.items[1].address, HTTPDNSIPAddress("192.0.2.1"))
    }

    func testEveryTruncationIsRefusedAsSyntax() {
        let bytes = Array(Self.example.utf8)
        for length in 0..<bytes.count {
            XCTAssertThrowsError(try HTTPDNSReportBatch.parse(Array(bytes.prefix(length))), "prefix \(length)") { error in
                XCTAssertEqual((error as? HTTPDNSReportBatch.ParseError)?.code, .syntax, "prefix \(length)")
            }
        }
    }

    func testTheShapeIsExact() {
        assertRefused("[]", .invalid, mentioning: "not a JSON object")
        assertRefused(#"{"reports":[]}"#, .invalid, mentioning: "empty")
        assertRefused(#"{"reports":{}}"#, .invalid, mentioning: "array")
        assertRefused(#"{}"#, .invalid, mentioning: "array")
        assertRefused(#"{"reports":[1]}"#, .invalid, mentioning: "reports[0] is not an object")
        assertRefused(Self.example.replacingOccurrences(of: "{\"reports\"", with: "{\"extra\":1,\"reports\""), .invalid, mentioning: "\"extra\"")
        assertRefused(Self.example.replacingOccurrences(of: "\"time\"", with: "\"when\""), .invalid, mentioning: "\"when\"")
        // Duplicate keys are two readings of one body: refused by the reader.
        assertRefused(Self.example.replacingOccurrences(of: "\"port\":443", with: "\"port\":443,\"port\":80"), .syntax, mentioning: "duplicate")
        assertRefused("{\"reports\":[" + String(repeating: "[", count: 40), .syntax)
    }

    func testEachMemberIsChecked() {
        func with(_ old: String, _ new: String) -> String { Self.example.replacingOccurrences(of: old, with: new) }
        let cases: [(String, String, String)] = [
            ("\"www.example.test\"", "\"192.0.2.7\"", "host"),
            ("\"www.example.test\"", "\"www..example.test\"", "host"),
            ("\"www.example.test\"", "\"" + String(repeating: "a", count: 64) + ".test\"", "host"),
            ("\"www.example.test\"", "\"" + String(repeating: "abcdefghi.", count: 26) + "test\"", "host"),
            ("\"www.example.test\"", "7", "host"),
            ("\"192.0.2.1\"", "\"192.0.2.256\"", "address"),
            ("\"192.0.2.1\"", "\"www.example.test\"", "address"),
            ("\"192.0.2.1\"", "\"fe80::1%eth0\"", "address"),
            ("\"192.0.2.1\"", "null", "address"),
            ("443", "0", "port"),
            ("443", "65536", "port"),
            ("443", "443.0", "port"),
            ("443", "\"443\"", "port"),
            ("\"connect-timeout\"", "\"timeout\"", "error"),
            ("\"connect-timeout\"", "\"CONNECT-TIMEOUT\"", "error"),
            ("1796300000", "-1", "time"),
            ("1796300000", "1e9", "time"),
            ("1796300000", "99999999999999999999", "time"),
            ("1796300000", "253402300800", "time"),
        ]
        for (old, new, member) in cases {
            assertRefused(with(old, new), .invalid, mentioning: "reports[0].\(member)")
        }
    }

    func testBoundsOnItemsAndBytes() throws {
        let item = #"{"host":"www.example.test","address":"192.0.2.1","port":443,"error":"reset","time":1}"#
        let fifty = #"{"reports":["# + Array(repeating: item, count: 50).joined(separator: ",") + "]}"
        XCTAssertEqual(try parse(fifty).items.count, 50)
        assertRefused(#"{"reports":["# + Array(repeating: item, count: 51).joined(separator: ",") + "]}", .invalid, mentioning: "51 reports")
        // 64 KiB exactly is read (whitespace is JSON); one byte more is refused before parsing.
        let padded = Self.example + String(repeating: " ", count: HTTPDNSReportBatch.maxBodyBytes - Self.example.utf8.count)
        XCTAssertEqual(try parse(padded).items.count, 1)
        assertRefused(padded + " ", .tooLarge)
    }

    func testReasonsNeverEchoTheBody() {
        let hostile = Self.example.replacingOccurrences(of: "\"time\"", with: "\"\\u0000<script>" + String(repeating: "x", count: 500) + "\"")
        do {
            _ = try parse(hostile)
            XCTFail("accepted")
        } catch {
            XCTAssertLessThan(error.detail.utf8.count, 100, error.detail)
            XCTAssertFalse(error.detail.contains("\u{0}"))
        }
    }
}
