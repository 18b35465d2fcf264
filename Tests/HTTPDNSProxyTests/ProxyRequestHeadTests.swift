import Foundation
import HTTPDNSNetworking
@testable import HTTPDNSLoopbackProxy
@testable import HTTPDNSDirect
import HTTPDNSTestSupport
import XCTest

/// The proxy's request-head parser: valid heads, every truncation, malformed and oversized input.
final class ProxyRequestHeadTests: XCTestCase {
    let connect = "CONNECT www.example.com:443 HTTP/1.1\r\nHost: www.example.com:443\r\nProxy-Authorization: Basic dTpw\r\nUser-Agent: curl/7.88.1\r\n\r\n"
    let forward = "GET http://www.example.com:8080/a/b?c=d HTTP/1.1\r\nHost: www.example.com:8080\r\nProxy-Connection: keep-alive\r\nAccept: */*\r\n\r\n"

    func parse(_ text: String) throws -> ProxyRequestHead.Parse {
        try ProxyRequestHead.parse(Array(text.utf8))
    }

    func head(_ text: String) throws -> ProxyRequestHead {
        guard case .complete(let head, _) = try parse(text) else {
            XCTFail("incomplete: \(text.debugDescription)")
            throw ProxyHeadError(.malformed, "incomplete")
        }
        return head
    }

    func assertRefused(_ text: String, _ code: ProxyHeadError.Code, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertThrowsError(try parse(text), text.debugDescription, file: file, line: line) { error in
            XCTAssertEqual((error as? ProxyHeadError)?.code, code, text.debugDescription, file: file, line: line)
        }
    }

    func testConnectHead() throws {
        let parsed = try parse(connect + "\u{16}\u{03}\u{01}")
        guard case .complete(let head, let length) = parsed else { return XCTFail("\(parsed)") }
        XCTAssertEqual(length, connect.utf8.count, "bytes after the head (a TLS ClientHello) are not part of it")
        XCTAssertEqual(head.method, "CONNECT")
        XCTAssertEqual(head.target, .tunnel(host: "www.example.com", port: 443))
        XCTAssertEqual(head.minorVersion, 1)
        XCTAssertEqual(head.value(of: "proxy-authorization"), "Basic dTpw")
        XCTAssertEqual(head.fields.count, 3)
    }

    /// The credential check compares the token as clients send it (canonical base64), scheme in any case.
    func testCredentialToken() {
        let token = Array(Data("u:p".utf8).base64EncodedString().utf8)  // dTpw
        func matches(_ value: String) -> Bool {
            var value = value
            return value.withUTF8 { ProxySettings.matches(UnsafeRawBufferPointer($0), token: token) }
        }
        for good in ["Basic dTpw", "basic dTpw", "BASIC  dTpw", "bAsIc \tdTpw"] {
            XCTAssertTrue(matches(good), good)
        }
        for bad in ["Basic dTp", "Basic dTpwx", "Basic dTpw=", "Bearer dTpw", "Basic", "Basic ", "BasicdTpw", "Basi dTpw", "Basic1 dTpw", "", "Basic\tdTpw"] {
            XCTAssertFalse(matches(bad), bad)
        }
    }

    func testForwardHead() throws {
        let head = try head(forward)
        XCTAssertEqual(head.target, .forward(host: "www.example.com", port: 8080, path: "/a/b?c=d"))
        XCTAssertEqual(try self.head("GET http://Example.COM HTTP/1.0\r\n\r\n").target, .forward(host: "example.com", port: 80, path: "/"))
        XCTAssertEqual(try self.head("GET http://example.com?q HTTP/1.1\r\n\r\n").target, .forward(host: "example.com", port: 80, path: "/?q"))
        XCTAssertEqual(try self.head("GET HTTP://example.com/x#frag HTTP/1.1\r\n\r\n").target, .forward(host: "example.com", port: 80, path: "/x"))
    }

    func testAuthorities() throws {
        XCTAssertEqual(try head("CONNECT [2001:db8::1]:443 HTTP/1.1\r\n\r\n").target, .tunnel(host: "2001:db8::1", port: 443))
        XCTAssertEqual(try head("CONNECT 192.0.2.7:8443 HTTP/1.1\r\n\r\n").target, .tunnel(host: "192.0.2.7", port: 8443))
        XCTAssertEqual(try head("CONNECT example.com.:443 HTTP/1.1\r\n\r\n").target, .tunnel(host: "example.com", port: 443))
        XCTAssertEqual(try head("GET http://[::1]:8080/ HTTP/1.1\r\n\r\n").target, .forward(host: "::1", port: 8080, path: "/"))
        for bad in [
            "example.com", "example.com:", "example.com:0", "example.com:65536", "example.com:44x", ":443", "[::1]", "[::1]:",
            "[example.com]:443", "user@example.com:443", "exa_mple..com:443", "-bad.com:443",
            "[::1:443", "::1:443", "example.com:123456",
        ] {
            assertRefused("CONNECT \(bad) HTTP/1.1\r\n\r\n", .badTarget)
        }
        assertRefused("GET http://user:pw@example.com/ HTTP/1.1\r\n\r\n", .badTarget)
        assertRefused("GET http:///path HTTP/1.1\r\n\r\n", .badTarget)
    }

    func testNonProxyTargets() {
        assertRefused("GET / HTTP/1.1\r\nHost: x\r\n\r\n", .badTarget)
        assertRefused("GET ftp://example.com/ HTTP/1.1\r\n\r\n", .badTarget)
        assertRefused("GET https://example.com/ HTTP/1.1\r\n\r\n", .unsupportedTarget)
        assertRefused("OPTIONS * HTTP/1.1\r\n\r\n", .badTarget)
    }

    /// Every prefix of a valid head is incomplete, the whole is complete, one byte at a time too.
    func testEveryTruncationIsIncomplete() throws {
        for text in [connect, forward] {
            let bytes = Array(text.utf8)
            for end in 0..<bytes.count {
                XCTAssertEqual(try ProxyRequestHead.parse(bytes[0..<end]), .incomplete, "prefix of \(end) bytes")
            }
            var buffer: [UInt8] = []
            var result: ProxyRequestHead.Parse = .incomplete
            for byte in bytes {
                XCTAssertEqual(result, .incomplete)
                buffer.append(byte)
                result = try ProxyRequestHead.parse(buffer)
            }
            guard case .complete(_, let length) = result else { return XCTFail("never complete") }
            XCTAssertEqual(length, bytes.count)
        }
    }

    func testMalformedHeads() {
        let cases: [(String, ProxyHeadError.Code)] = [
            ("CONNECT a.com:443 HTTP/1.1\n\n", .malformed),
            ("CONNECT a.com:443 HTTP/1.1\r\nHost: a\n", .malformed),
            ("CONNECT  a.com:443 HTTP/1.1\r\n\r\n", .malformed),
            ("CONNECT a.com:443  HTTP/1.1\r\n\r\n", .malformed),
            ("CONNECT a.com:443\r\n\r\n", .malformed),
            ("CONNECT a.com:443 HTTP/1.1 extra\r\n\r\n", .malformed),
            ("\r\n\r\n", .malformed),
            ("CON\u{7F}NECT a.com:443 HTTP/1.1\r\n\r\n", .malformed),
            ("GET(x) http://a.com/ HTTP/1.1\r\n\r\n", .malformed),
            (String(repeating: "A", count: 33) + " http://a.com/ HTTP/1.1\r\n\r\n", .malformed),
            ("CONNECT a.com:443 HTTP/2.0\r\n\r\n", .unsupportedVersion),
            ("CONNECT a.com:443 http/1.1\r\n\r\n", .unsupportedVersion),
            ("CONNECT a.com:443 HTTP/1.1\r\n Host: a\r\n\r\n", .malformed),
            ("CONNECT a.com:443 HTTP/1.1\r\nHost: a\r\n\tfolded\r\n\r\n", .malformed),
            ("CONNECT a.com:443 HTTP/1.1\r\nNoColon\r\n\r\n", .malformed),
            ("CONNECT a.com:443 HTTP/1.1\r\n: empty\r\n\r\n", .malformed),
            ("CONNECT a.com:443 HTTP/1.1\r\nBad Name: x\r\n\r\n", .malformed),
            ("CONNECT a.com:443 HTTP/1.1\r\nX: a\u{01}b\r\n\r\n", .malformed),
            ("CONNECT a.com:443 HTTP/1.1\r\nX: a\rb\r\n\r\n", .malformed),
            ("GET http://a.com/ HTTP/1.1\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n", .malformed),
            ("GET http://a.com/ HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n", .malformed),
            ("GET http://a.com/ HTTP/1.1\r\nContent-Length: -1\r\n\r\n", .malformed),
            ("GET http://a.com/ HTTP/1.1\r\nContent-Length: \r\n\r\n", .malformed),
            ("GET http://a.com/\u{01} HTTP/1.1\r\n\r\n", .malformed),
            ("CONNECT exa mple.com:443 HTTP/1.1\r\n\r\n", .malformed),
        ]
        for (text, code) in cases {
            assertRefused(text, code)
        }
        XCTAssertNoThrow(try parse("GET http://a.com/ HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\n"))
        XCTAssertNoThrow(try parse("GET http://a.com/ HTTP/1.1\r\nX:\r\nY:  spaced \t\r\n\r\n"))
    }

    func testLimits() throws {
        let big = "CONNECT a.com:443 HTTP/1.1\r\nX: " + String(repeating: "a", count: ProxyRequestHead.maximumBytes) + "\r\n\r\n"
        assertRefused(big, .tooLarge)
        // Refused as soon as the limit passes, before any blank line.
        // (Bytes, not characters: "\r\n" is one Character.)
        let bytes = Array(big.utf8)
        XCTAssertThrowsError(try ProxyRequestHead.parse(bytes.prefix(ProxyRequestHead.maximumBytes + 1)))
        XCTAssertEqual(try ProxyRequestHead.parse(bytes.prefix(ProxyRequestHead.maximumBytes)), .incomplete)
        let fields = (0...ProxyRequestHead.maximumFields).map { "X-\($0): v\r\n" }.joined()
        assertRefused("CONNECT a.com:443 HTTP/1.1\r\n" + fields + "\r\n", .tooLarge)
        let fitting = (1..<ProxyRequestHead.maximumFields).map { "X-\($0): v\r\n" }.joined()
        XCTAssertNoThrow(try parse("CONNECT a.com:443 HTTP/1.1\r\n" + fitting + "\r\n"))
        XCTAssertEqual(ProxyHeadError(.tooLarge, "").status, 431)
        XCTAssertEqual(ProxyHeadError(.malformed, "").status, 400)
    }

    /// Random bytes and random mutations of valid heads: an answer or an error, never a crash.
    func testMutationsNeverCrash() {
        var generator = TestRandom()
        let seeds = [Array(connect.utf8), Array(forward.utf8)]
        for round in 0..<20_000 {
            var bytes = seeds[round % 2]
            for _ in 0..<(1 + Int(generator.next() % 4)) {
                let index = Int(generator.next() % UInt64(bytes.count))
                switch generator.next() % 3 {
                case 0: bytes[index] = UInt8(truncatingIfNeeded: generator.next())
                case 1: bytes.remove(at: index)
                default: bytes.insert(UInt8(truncatingIfNeeded: generator.next()), at: index)
                }
                if bytes.isEmpty { bytes = [0] }
            }
            if let result = try? ProxyRequestHead.parse(bytes), case .complete(_, let length) = result {
                XCTAssertLessThanOrEqual(length, bytes.count, "\(bytes) with \(generator)")
            }
        }
    }

    // MARK: - Forwarding

    func testUpstreamHeadDropsHopByHopFields() throws {
        let head = try head(
            "POST http://a.example:8080/p?q HTTP/1.0\r\nHost: evil.example\r\nConnection: keep-alive, X-Secret\r\nX-Secret: 1\r\n"
                + "Proxy-Authorization: Basic dTpw\r\nProxy-Connection: keep-alive\r\nKeep-Alive: 300\r\nUpgrade: websocket\r\n"
                + "Content-Length: 3\r\nAccept: */*\r\n\r\n")
        let text = String(decoding: ProxyForwarding.upstreamHead(head), as: UTF8.self)
        XCTAssertEqual(text, "POST /p?q HTTP/1.1\r\nHost: a.example:8080\r\nContent-Length: 3\r\nAccept: */*\r\nConnection: close\r\n\r\n")
        let v6 = try self.head("GET http://[2001:db8::1]/ HTTP/1.1\r\n\r\n")
        XCTAssertTrue(String(decoding: ProxyForwarding.upstreamHead(v6), as: UTF8.self).contains("Host: [2001:db8::1]\r\n"))
    }

    func testResponseScan() throws {
        let response = Array("HTTP/1.1 200 OK\r\nConnection: keep-alive\r\nKeep-Alive: timeout=5\r\nContent-Length: 2\r\n\r\nok".utf8)
        for end in 0..<(response.count - 2) {
            XCTAssertEqual(try ProxyForwarding.scanResponse(response[0..<end]), .incomplete, "prefix \(end)")
        }
        guard case .head(let rewritten, let length, let final) = try ProxyForwarding.scanResponse(response[...]) else {
            return XCTFail("no head")
        }
        XCTAssertTrue(final)
        XCTAssertEqual(length, response.count - 2)
        XCTAssertEqual(String(decoding: rewritten, as: UTF8.self), "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\n")

        // RFC 9112 §5.1: a proxy removes blanks between a response field's name and its colon.
        let spaced = Array("HTTP/1.1 200 OK\r\nX-Spaced \t: 1\r\nConnection : keep-alive\r\n\r\n".utf8)
        guard case .head(let cleaned, _, true) = try ProxyForwarding.scanResponse(spaced[...]) else { return XCTFail("no head") }
        XCTAssertEqual(String(decoding: cleaned, as: UTF8.self), "HTTP/1.1 200 OK\r\nX-Spaced: 1\r\nConnection: close\r\n\r\n")

        let interim = Array("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n".utf8)
        guard case .head(let first, let firstLength, false) = try ProxyForwarding.scanResponse(interim[...]) else { return XCTFail("no interim") }
        XCTAssertEqual(first, Array("HTTP/1.1 100 Continue\r\n\r\n".utf8))
        guard case .head(_, _, true) = try ProxyForwarding.scanResponse(interim[firstLength...]) else { return XCTFail("no final") }

        for bad in ["HTTP/2 200 OK\r\n\r\n", "SSH-2.0-OpenSSH\r\n\r\n", "HTTP/1.1 2x0 OK\r\n\r\n", "HTTP/1.1 200 OK\r\nno colon\r\n\r\n", "garbage"] {
            XCTAssertThrowsError(try ProxyForwarding.scanResponse(Array(bad.utf8)[...]), bad)
        }
        XCTAssertThrowsError(try ProxyForwarding.scanResponse(Array(repeating: UInt8(ascii: "H"), count: 5)[...]))
        let huge = Array(("HTTP/1.1 200 OK\r\nX: " + String(repeating: "a", count: ProxyForwarding.maximumResponseHeadBytes)).utf8)
        XCTAssertThrowsError(try ProxyForwarding.scanResponse(huge[...]))
    }

    /// Field values past ASCII (obs-text: Latin-1 names, raw UTF-8, invalid sequences) leave the
    /// proxy with the bytes they came with, in both directions (RFC 9110 §5.5: opaque data).
    func testFieldValueBytesPassUnchanged() throws {
        let values: [[UInt8]] = [
            Array("caf".utf8) + [0xE9],  // Latin-1 é
            Array("\u{20AC} 5".utf8),  // UTF-8 €
            [0x61, 0xC3, 0x28, 0xFF, 0x80, 0x62],  // not UTF-8
        ]
        for value in values {
            let request = Array("GET http://a.example/p HTTP/1.1\r\nX-Value: ".utf8) + value + Array("\r\n\r\n".utf8)
            guard case .complete(let head, _) = try ProxyRequestHead.parse(request) else { return XCTFail("incomplete") }
            XCTAssertEqual(ProxyLatin1.bytes(try XCTUnwrap(head.value(of: "x-value"))), value)
            let upstream = ProxyForwarding.upstreamHead(head)
            XCTAssertEqual(upstream, Array("GET /p HTTP/1.1\r\nHost: a.example\r\nX-Value: ".utf8) + value + Array("\r\nConnection: close\r\n\r\n".utf8))

            let response = Array("HTTP/1.1 200 OK\r\nContent-Disposition: attachment; filename=\"".utf8) + value + Array("\"\r\nContent-Length: 0\r\n\r\n".utf8)
            guard case .head(let rewritten, let length, true) = try ProxyForwarding.scanResponse(response[...]) else { return XCTFail("no head") }
            XCTAssertEqual(length, response.count)
            XCTAssertEqual(
                rewritten,
                Array("HTTP/1.1 200 OK\r\nContent-Disposition: attachment; filename=\"".utf8) + value
                    + Array("\"\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".utf8))
        }
    }
}
