import DNSWire
import Foundation
import HTTPDNSCore
@testable import HTTPDNSServer
import HTTPServing
import XCTest

/// DNS over TLS as the service answers it: each message is the DoH wire endpoint's query (a POST of
/// `/dns-query` flagged as a message), and a padded query gets RFC 8467's block padding.
final class HTTPDNSServiceDoTTests: XCTestCase {
    private let service = HTTPDNSService(configuration: .init(zone: try! HTTPDNSZone(json: Data(#"""
        {"www.example.test": {"A": ["192.0.2.1", "192.0.2.2"], "ttl": 120}}
        """#.utf8))))

    private func answer(_ query: [UInt8], message: Bool = true) throws -> [UInt8] {
        var request = HTTPServer.Request(
            method: "POST", path: "/dns-query", headers: [.init(name: "Content-Type", value: HTTPDNSService.dnsMessageType)],
            body: Data(query))
        request.isMessage = message
        let response = service.handle(request)
        XCTAssertEqual(response.status, 200)
        guard case .data(let body) = response.body else {
            XCTFail("a streaming answer")
            return []
        }
        return [UInt8](body)
    }

    /// The EDNS options of `message`'s OPT record, as (code, data length) pairs.
    private func options(_ message: DNSMessage) -> [(UInt16, Int)] {
        guard let options = message.edns?.options else { return [] }
        var found: [(UInt16, Int)] = []
        var offset = 0
        while offset + 4 <= options.count {
            let length = Int(options[offset + 2]) << 8 | Int(options[offset + 3])
            found.append((UInt16(options[offset]) << 8 | UInt16(options[offset + 1]), length))
            offset += 4 + length
        }
        return found
    }

    func testAPaddedQueryGetsAnAnswerPaddedToA468ByteBlock() throws {
        // RFC 8467 §4.1: padded queries are answered in blocks of 468 bytes; the query's own
        // padding (here to 128 bytes, the client side's block) says that it wants it.
        for (name, id) in [("www.example.test", UInt16(7)), ("nowhere.example.test", 8)] {
            var edns = DNSEDNS()
            edns.options = [0, 12, 0, 40] + [UInt8](repeating: 0, count: 40)
            let query = DNSMessage.query(name: try DNSName(name), type: .A, id: id, edns: edns)
            let bytes = try answer(query)
            XCTAssertEqual(bytes.count % HTTPDNSService.responsePaddingBlock, 0, "\(name): \(bytes.count) bytes")
            let decoded = try DNSMessage(decoding: bytes)
            XCTAssertEqual(decoded.id, id)
            XCTAssertEqual(options(decoded).map { $0.0 }, [12], name)
            XCTAssertTrue(bytes.suffix(options(decoded).first?.1 ?? 0).allSatisfy { $0 == 0 }, "RFC 7830 §3: padding is zeros")
            // Asked again, the kept answer is padded the same way.
            XCTAssertEqual(try answer(query), bytes, name)
            // DoH is left as it was.
            XCTAssertEqual(options(try DNSMessage(decoding: try answer(query, message: false))).map { $0.0 }, [], name)
        }
    }

    func testAnUnpaddedQueryGetsNoPadding() throws {
        let plain = try answer(DNSMessage.query(name: try DNSName("www.example.test"), type: .A, id: 9, edns: DNSEDNS()))
        XCTAssertEqual(options(try DNSMessage(decoding: plain)).map { $0.0 }, [])
        let bare = try answer(DNSMessage.query(name: try DNSName("www.example.test"), type: .A, id: 9))
        XCTAssertNil(try DNSMessage(decoding: bare).edns)
    }

    func testKeepaliveIsAnsweredWithTheIdleTimeoutAndZeroWhileDraining() throws {
        // RFC 7828 §3.3.2: asked with an empty edns-tcp-keepalive option, the answer carries the
        // idle timeout in units of 100 ms (the default 10 s: 100), next to the padding asked for.
        var edns = DNSEDNS()
        edns.options = [0, 11, 0, 0, 0, 12, 0, 0]
        let query = DNSMessage.query(name: try DNSName("www.example.test"), type: .A, id: 3, edns: edns)
        let bytes = try answer(query)
        let decoded = try DNSMessage(decoding: bytes)
        XCTAssertEqual(options(decoded).map { $0.0 }, [11, 12])
        XCTAssertEqual(Array(try XCTUnwrap(decoded.edns?.options).prefix(6)), [0, 11, 0, 2, 0, 100])
        XCTAssertEqual(bytes.count % HTTPDNSService.responsePaddingBlock, 0)
        // Draining: 0, which asks the client to close the connection. (The service's own answer,
        // without the options, as answerWire makes it.)
        let plain = try answer(DNSMessage.query(name: try DNSName("www.example.test"), type: .A, id: 3, edns: DNSEDNS()))
        let drained = HTTPDNSService.dotAnswer(
            HTTPServer.Response(status: 200, body: Data(plain)), query: query, idleTimeout: .seconds(10), draining: true)
        guard case .data(let body) = drained.body else { return XCTFail("no body") }
        XCTAssertEqual(Array(try XCTUnwrap(try DNSMessage(decoding: [UInt8](body)).edns?.options).prefix(6)), [0, 11, 0, 2, 0, 0])
    }

    func testAMessageThatIsNoQueryIsRefusedWithoutAnAnswer() {
        var request = HTTPServer.Request(
            method: "POST", path: "/dns-query", headers: [.init(name: "Content-Type", value: HTTPDNSService.dnsMessageType)],
            body: Data([1, 2, 3]))
        request.isMessage = true
        // Not 200: the message stream closes the connection (HTTPServer.MessageStream).
        XCTAssertEqual(service.handle(request).status, 400)
    }
}
