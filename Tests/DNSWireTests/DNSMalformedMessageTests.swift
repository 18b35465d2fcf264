import DNSWire
import XCTest

/// Hand-made hostile vectors: each must fail with the right code.
final class DNSMalformedMessageTests: XCTestCase {
    /// A response header with the given counts.
    private func header(qd: UInt8 = 1, an: UInt8 = 0, ns: UInt8 = 0, ar: UInt8 = 0) -> [UInt8] {
        [0x12, 0x34, 0x81, 0x80, 0, qd, 0, an, 0, ns, 0, ar]
    }

    private let question: [UInt8] = [1, 0x61, 4, 0x74, 0x65, 0x73, 0x74, 0, 0, 1, 0, 1]  // a.test A IN

    private func assertCode(_ bytes: [UInt8], _ code: DNSWireError.Code, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertThrowsError(try DNSMessage(decoding: bytes), file: file, line: line) { error in
            XCTAssertEqual((error as? DNSWireError)?.code, code, "\(error)", file: file, line: line)
        }
    }

    func testPointerToItselfIsRejected() {
        assertCode(header() + [0xC0, 12, 0, 1, 0, 1], .badPointer)
    }

    func testTwoPointersThatLoopAreRejected() {
        // Question 1 at 12: label "a" then pointer to 16; offset 16 holds a pointer back to 12.
        // Each pointer taken alone points backwards from where it sits, but the second one does not
        // point before the name's start, so the walk would revisit bytes: rejected.
        let bytes = header(qd: 1) + [1, 0x61, 0xC0, 16, 0xC0, 12, 0, 1, 0, 1]
        assertCode(bytes, .badPointer)
    }

    func testBackwardPointerIntoTheSameNameIsRejected() {
        // "a" then a pointer back to the "a" label itself: loops without a strictly-backward rule.
        assertCode(header() + [1, 0x61, 0xC0, 12, 0, 1, 0, 1], .badPointer)
    }

    func testForwardPointerIsRejected() {
        assertCode(header() + [0xC0, 14, 1, 0x61, 0, 0, 1, 0, 1], .badPointer)
    }

    func testValidBackwardPointerIsAccepted() throws {
        // The answer owner points at the question name at offset 12.
        let answer: [UInt8] = [0xC0, 12, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 10, 0, 0, 1]
        let message = try DNSMessage(decoding: header(an: 1) + question + answer)
        XCTAssertEqual(message.answers.first?.name, try DNSName("a.test"))
        XCTAssertEqual(message.answers.first?.data, .a([10, 0, 0, 1]))
    }

    /// A message whose second answer's owner is a chain of `links` pointers, each to the one before,
    /// hidden in the RDATA of an unknown-type record; the chain ends at the root name at offset 12.
    private func pointerChain(links: Int) -> [UInt8] {
        var bytes = header(qd: 1, an: 2) + [0, 0, 1, 0, 1]  // question: root A IN
        let rdlength = UInt16(2 * links)
        bytes += [0, 0, 99, 0, 1, 0, 0, 0, 0, UInt8(rdlength >> 8), UInt8(rdlength & 0xFF)]
        var previous = 12
        for _ in 0..<links {
            let here = bytes.count
            bytes += [0xC0 | UInt8(previous >> 8), UInt8(previous & 0xFF)]
            previous = here
        }
        bytes += [0xC0 | UInt8(previous >> 8), UInt8(previous & 0xFF), 0, 1, 0, 1, 0, 0, 0, 1, 0, 4, 1, 2, 3, 4]
        return bytes
    }

    func testShortPointerChainIsAccepted() throws {
        let message = try DNSMessage(decoding: pointerChain(links: 10))
        XCTAssertEqual(message.answers.last?.name, .root)
    }

    /// Strictly backward pointers cannot loop, but a long chain would still cost time per name.
    func testPointerChainLongerThanAnyNameIsRejected() {
        assertCode(pointerChain(links: 200), .tooManyPointers)
    }

    func testLabelTooLongAndBadLabelType() {
        assertCode(header() + [0x40, 0x61, 0, 0, 1, 0, 1], .badLabelType)
        assertCode(header() + [0x80, 0x61, 0, 0, 1, 0, 1], .badLabelType)
    }

    func testNameOver255OctetsIsRejected() {
        var name: [UInt8] = []
        for _ in 0..<5 { name += [63] + Array(repeating: 0x61, count: 63) }
        assertCode(header() + name + [0, 0, 1, 0, 1], .nameTooLong)
    }

    func testARecordMustBeFourBytes() {
        let answer: [UInt8] = [0xC0, 12, 0, 1, 0, 1, 0, 0, 0, 60, 0, 5, 10, 0, 0, 1, 9]
        assertCode(header(an: 1) + question + answer, .badRdataLength)
    }

    func testAAAARecordMustBeSixteenBytes() {
        let answer: [UInt8] = [0xC0, 12, 0, 28, 0, 1, 0, 0, 0, 60, 0, 4, 10, 0, 0, 1]
        assertCode(header(an: 1) + question + answer, .badRdataLength)
    }

    func testNameInRdataMustEndAtRdlength() {
        // CNAME RDLENGTH 2 but the name "b" + root takes 3 bytes.
        let short: [UInt8] = [0xC0, 12, 0, 5, 0, 1, 0, 0, 0, 60, 0, 2, 1, 0x62, 0]
        assertCode(header(an: 1) + question + short, .badRdataLength)
        // CNAME RDLENGTH 4 but the name takes 2 (a pointer): one stray byte inside RDATA.
        let long: [UInt8] = [0xC0, 12, 0, 5, 0, 1, 0, 0, 0, 60, 0, 4, 0xC0, 12, 0, 0]
        assertCode(header(an: 1) + question + long, .badRdataLength)
    }

    func testRdlengthPastTheEndIsTruncation() {
        let answer: [UInt8] = [0xC0, 12, 0, 16, 0, 1, 0, 0, 0, 60, 0xFF, 0xFF, 1, 0x61]
        assertCode(header(an: 1) + question + answer, .truncated)
    }

    func testHugeCountsInATinyMessageFailFast() {
        assertCode([0, 0, 0x81, 0x80, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF], .truncated)
    }

    func testSOAWithWrongFixedPartIsRejected() {
        let soa: [UInt8] = [0xC0, 12, 0, 6, 0, 1, 0, 0, 0, 60, 0, 6, 0, 0, 1, 2, 3, 4]
        assertCode(header(ns: 1) + question + soa, .badRdataLength)
    }
}
