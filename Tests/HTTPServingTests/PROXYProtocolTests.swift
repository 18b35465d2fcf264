import HTTPDNSCore
import HTTPServing
import XCTest

/// The PROXY protocol reader against the examples and rules of HAProxy's proxy-protocol.txt
/// (https://www.haproxy.org/download/2.9/doc/proxy-protocol.txt, §2.1 text, §2.2 binary).
final class PROXYProtocolTests: XCTestCase {
    private let payload = Array("GET /health HTTP/1.1\r\n\r\n".utf8)

    private func v2(command: UInt8 = 1, family: UInt8, block: [UInt8]) -> [UInt8] {
        PROXYProtocolHeader.v2Signature + [0x20 | command, family, UInt8(block.count >> 8), UInt8(block.count & 0xff)] + block
    }

    /// TCP over IPv4, 192.0.2.7:56324 → 198.51.100.1:443, then a TLV (PP2_TYPE_AUTHORITY "a.test").
    private var v2IPv4: [UInt8] {
        v2(family: 0x11, block: [192, 0, 2, 7, 198, 51, 100, 1, 0xdc, 0x04, 0x01, 0xbb] + [0x02, 0x00, 0x06] + Array("a.test".utf8))
    }

    private var v2IPv6: [UInt8] {
        let source = HTTPDNSIPAddress("2001:db8::7")!.bytes
        let destination = HTTPDNSIPAddress("2001:db8::1")!.bytes
        return v2(family: 0x21, block: source + destination + [0x00, 0x35, 0x01, 0xbb])
    }

    /// Valid headers and what they say.
    private var valid: [(bytes: [UInt8], result: PROXYProtocolHeader.ParseResult)] {
        let v1 = Array("PROXY TCP4 192.168.0.1 192.168.0.11 56324 443\r\n".utf8)  // the spec's own example
        let v1Six = Array("PROXY TCP6 2001:db8::7 2001:db8::1 0 65535\r\n".utf8)
        // The longest possible line, 107 bytes (§2.1).
        let longest = Array(("PROXY UNKNOWN " + Array(repeating: "ffff", count: 8).joined(separator: ":") + " "
            + Array(repeating: "ffff", count: 8).joined(separator: ":") + " 65535 65535\r\n").utf8)
        let unknown = Array("PROXY UNKNOWN\r\n".utf8)
        let local = v2(command: 0, family: 0x00, block: [])
        let localWithJunkFamily = v2(command: 0, family: 0x99, block: [1, 2, 3])
        let unspecified = v2(family: 0x00, block: [])
        let unix = v2(family: 0x31, block: [UInt8](repeating: 0, count: 216))
        return [
            (v1, .header(source: HTTPDNSIPAddress("192.168.0.1")!, port: 56_324, consumed: v1.count)),
            (v1Six, .header(source: HTTPDNSIPAddress("2001:db8::7")!, port: 0, consumed: v1Six.count)),
            (longest, .local(consumed: 107)),
            (unknown, .local(consumed: unknown.count)),
            (v2IPv4, .header(source: HTTPDNSIPAddress("192.0.2.7")!, port: 56_324, consumed: 16 + 12 + 9)),
            (v2IPv6, .header(source: HTTPDNSIPAddress("2001:db8::7")!, port: 53, consumed: 16 + 36)),
            (local, .local(consumed: 16)),
            (localWithJunkFamily, .local(consumed: 19)),
            (unspecified, .local(consumed: 16)),
            (unix, .local(consumed: 16 + 216)),
        ]
    }

    func testSpecExamplesAndBothVersions() {
        for (bytes, expected) in valid {
            XCTAssertEqual(PROXYProtocolHeader.parse(bytes), expected, String(decoding: bytes, as: UTF8.self))
            // The client's bytes after the header are left alone.
            XCTAssertEqual(PROXYProtocolHeader.parse(bytes + payload), expected)
        }
        XCTAssertEqual(valid[2].bytes.count, PROXYProtocolHeader.maxV1Length)
    }

    func testEveryTruncationNeedsMore() {
        for (bytes, _) in valid {
            for length in 0..<bytes.count {
                XCTAssertEqual(PROXYProtocolHeader.parse(Array(bytes[..<length])), .needMore, "\(length) of \(bytes.count)")
            }
        }
    }

    func testMalformedHeadersAreRefused() {
        let lines = [
            "GET / HTTP/1.1\r\n",
            "proxy TCP4 192.0.2.1 192.0.2.2 1 2\r\n",
            "PROXY tcp4 192.0.2.1 192.0.2.2 1 2\r\n",
            "PROXY TCP5 192.0.2.1 192.0.2.2 1 2\r\n",
            "PROXY TCP4 192.0.2.1 192.0.2.2 1\r\n",
            "PROXY TCP4 192.0.2.1 192.0.2.2 1 2 3\r\n",
            "PROXY TCP4  192.0.2.1 192.0.2.2 1 2\r\n",
            "PROXY TCP4 192.0.2.1 192.0.2.2 1 2 \r\n",
            "PROXY TCP4 192.0.2.01 192.0.2.2 1 2\r\n",
            "PROXY TCP4 192.0.2.1 192.0.2 1 2\r\n",
            "PROXY TCP4 2001:db8::1 192.0.2.2 1 2\r\n",
            "PROXY TCP6 192.0.2.1 2001:db8::2 1 2\r\n",
            "PROXY TCP6 [2001:db8::1] 2001:db8::2 1 2\r\n",
            "PROXY TCP6 fe80::1%eth0 2001:db8::2 1 2\r\n",
            "PROXY TCP4 192.0.2.1 192.0.2.2 65536 2\r\n",
            "PROXY TCP4 192.0.2.1 192.0.2.2 0443 2\r\n",
            "PROXY TCP4 192.0.2.1 192.0.2.2 -1 2\r\n",
            "PROXY TCP4 192.0.2.1 192.0.2.2 +1 2\r\n",
            "PROXY TCP4 192.0.2.1 192.0.2.2 1 2\rX",
            "PROXY TCP4 192.0.2.1 192.0.2.2 1 2\nGET / HTTP/1.1\r\n",
            "PROXY \r\n",
            "PROXY TCP4 \u{1b}[31m 192.0.2.2 1 2\r\n",
            "PROXY TCP4 192.0.2.1 192.0.2.2 1 2" + String(repeating: " ", count: 80),
        ]
        for line in lines {
            guard case .invalid = PROXYProtocolHeader.parse(Array(line.utf8)) else {
                return XCTFail("accepted \(line.debugDescription): \(PROXYProtocolHeader.parse(Array(line.utf8)))")
            }
        }
        let signature = PROXYProtocolHeader.v2Signature
        let binary: [[UInt8]] = [
            signature + [0x11, 0x11, 0x00, 0x0c] + [UInt8](repeating: 0, count: 12),  // version 1 in binary
            signature + [0x32, 0x11, 0x00, 0x0c] + [UInt8](repeating: 0, count: 12),  // version 3
            signature + [0x22, 0x11, 0x00, 0x0c] + [UInt8](repeating: 0, count: 12),  // command 2
            signature + [0x21, 0x41, 0x00, 0x0c] + [UInt8](repeating: 0, count: 12),  // unknown family
            signature + [0x21, 0x10, 0x00, 0x0c] + [UInt8](repeating: 0, count: 12),  // IPv4 with UNSPEC transport
            signature + [0x21, 0x11, 0x00, 0x08] + [UInt8](repeating: 0, count: 8),  // IPv4 block too short
            signature + [0x21, 0x21, 0x00, 0x0c] + [UInt8](repeating: 0, count: 12),  // IPv6 block too short
            signature + [0x21, 0x31, 0x00, 0x10] + [UInt8](repeating: 0, count: 16),  // UNIX block too short
            [0x0d, 0x0a, 0x0d, 0x0a, 0x00, 0x0d, 0x0a, 0x51, 0x55, 0x49, 0x54, 0x0b, 0x21, 0x11, 0x00, 0x0c],  // signature typo
        ]
        for bytes in binary {
            guard case .invalid = PROXYProtocolHeader.parse(bytes) else {
                return XCTFail("accepted \(bytes): \(PROXYProtocolHeader.parse(bytes))")
            }
        }
        // A binary header refuses a short block as soon as the length is known, without waiting.
        guard case .invalid = PROXYProtocolHeader.parse(Array((signature + [0x21, 0x11, 0x00, 0x04]))) else {
            return XCTFail("short block accepted before its bytes")
        }
    }

    func testAHundredAndSevenBytesWithoutCRLFAreRefused() {
        let line = Array(("PROXY UNKNOWN " + String(repeating: "x", count: 200)).utf8)
        XCTAssertEqual(PROXYProtocolHeader.parse(Array(line[..<105])), .needMore)
        // 106 bytes without a CR: the CRLF could only end past byte 107.
        for length in [106, 107] {
            guard case .invalid(let reason) = PROXYProtocolHeader.parse(Array(line[..<length])) else { return XCTFail("\(length)") }
            XCTAssertTrue(reason.contains("107"), reason)
        }
        // A line whose CRLF ends at byte 108 (found by fuzz-smoke): one byte too long, however it goes on.
        let tooLong = Array(line[..<106]) + Array("\r\n".utf8)
        XCTAssertEqual(tooLong.count, PROXYProtocolHeader.maxV1Length + 1)
        for bytes in [tooLong, tooLong + payload] {
            guard case .invalid(let reason) = PROXYProtocolHeader.parse(bytes) else { return XCTFail("108-byte line accepted") }
            XCTAssertTrue(reason.contains("107"), reason)
        }
    }

    func testRandomBytesNeverCrashAndNeverConsumeMoreThanGiven() {
        var generator = SeededRandom(seed: 0x5052_4f58)
        let starts: [[UInt8]] = [[], Array("PROXY ".utf8), Array("PROXY TCP4 ".utf8), PROXYProtocolHeader.v2Signature,
                                 PROXYProtocolHeader.v2Signature + [0x21, 0x11]]
        for round in 0..<20_000 {
            let tail = (0..<Int.random(in: 0...120, using: &generator)).map { _ in
                round % 2 == 0 ? UInt8.random(in: 0...255, using: &generator) : Array(" .:0123456789abcdef\r\nTCPUNKOWX46".utf8).randomElement(using: &generator)!
            }
            let bytes = starts[round % starts.count] + tail
            switch PROXYProtocolHeader.parse(bytes) {
            case .header(_, _, let consumed), .local(let consumed):
                XCTAssertLessThanOrEqual(consumed, bytes.count)
                XCTAssertGreaterThanOrEqual(consumed, 15)
            case .needMore:
                XCTAssertLessThan(bytes.count, 16 + 65_535)
            case .invalid:
                break
            }
        }
    }
}

/// A small deterministic generator (SplitMix64), so that a failure can be replayed.
struct SeededRandom: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9e37_79b9_7f4a_7c15
        var z = state
        z = (z ^ (z >> 30)) &* 0xbf58_476d_1ce4_e5b9
        z = (z ^ (z >> 27)) &* 0x94d0_49bb_1331_11eb
        return z ^ (z >> 31)
    }
}
