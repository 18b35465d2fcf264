import DNSWire
import Foundation
import HTTPDNS
import HTTPDNSCore
@testable import HTTPDNSServer
import HTTPDNSTestSupport
import HTTPServing
import XCTest

/// `/dns-query`: RFC 8484 wire format (GET and POST), JSON, and the RFC 8484 §6 hardening statuses.
final class HTTPDNSServiceDoHTests: HTTPDNSServiceTestCase {
    private func query(_ name: String, _ type: DNSRecordType, edns: DNSEDNS? = nil) throws -> [UInt8] {
        DNSMessage.query(name: try DNSName(name), type: type, id: 0, edns: edns)
    }

    private func get(_ service: HTTPDNSService, _ bytes: [UInt8]) async throws -> (HTTPTransportResponseShim, DNSMessage) {
        let response = try await fetch(base(service) + "/dns-query?dns=" + DoHWireFormat.base64URL(bytes))
        XCTAssertEqual(response.statusCode, 200, text(response))
        XCTAssertEqual(response.header("content-type"), "application/dns-message")
        return (HTTPTransportResponseShim(cacheControl: response.header("cache-control")), try DNSMessage(decoding: [UInt8](response.body)))
    }

    struct HTTPTransportResponseShim {
        var cacheControl: String?
    }

    func testExactBytesOfAnAnswer() async throws {
        let service = try startService()
        let response = try await fetch(base(service) + "/dns-query?dns=" + DoHWireFormat.base64URL(try query("www.example.test", .A)))
        XCTAssertEqual(response.header("cache-control"), "max-age=120")
        let question: [UInt8] = [3] + Array("www".utf8) + [7] + Array("example".utf8) + [4] + Array("test".utf8) + [0, 0, 1, 0, 1]
        var expected: [UInt8] = [0x00, 0x00, 0x85, 0x80, 0x00, 0x01, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00] + question
        for last: UInt8 in [1, 2] {
            expected += [0xc0, 0x0c, 0x00, 0x01, 0x00, 0x01, 0x00, 0x00, 0x00, 0x78, 0x00, 0x04, 192, 0, 2, last]
        }
        XCTAssertEqual([UInt8](response.body), expected)
    }

    func testAnswersEchoQuestionAndIDAndFollowZoneCNAMEs() async throws {
        let service = try startService()
        var message = DNSMessage.makeQuery(name: try DNSName("Alias.EXAMPLE.test"), type: .A, id: 0x4242)
        message.checkingDisabled = true
        let (headers, answer) = try await get(service, try message.encode())
        XCTAssertEqual(answer.id, 0x4242)
        XCTAssertEqual(answer.questions, message.questions)
        XCTAssertEqual(answer.questions.first?.name.text(), "Alias.EXAMPLE.test")
        XCTAssertTrue(answer.isResponse && answer.isAuthoritative && answer.recursionAvailable && answer.recursionDesired)
        XCTAssertEqual(answer.answers.map(\.type), [.CNAME, .A, .A])
        let found = answer.addresses(for: message.questions[0].name)
        XCTAssertEqual(found.addresses, [[192, 0, 2, 1], [192, 0, 2, 2]])
        XCTAssertEqual(found.ttl, 90)
        XCTAssertEqual(headers.cacheControl, "max-age=90")
    }

    func testNXDOMAINCarriesTheApexSOAAndNODATAForOtherTypes() async throws {
        let service = try startService()
        let (nxHeaders, nx) = try await get(service, try query("nowhere.example.test", .A))
        XCTAssertEqual(nx.rcode, .nameError)
        XCTAssertTrue(nx.answers.isEmpty)
        XCTAssertEqual(nx.authorities.first?.name, try DNSName("example.test"))
        XCTAssertEqual(nx.negativeTTL, 60)
        XCTAssertEqual(nxHeaders.cacheControl, "max-age=60")
        for (name, type) in [("v4only.example.test", DNSRecordType.AAAA), ("www.example.test", .TXT),
                             ("www.example.test", .HTTPS), ("example.test", .A), ("www.example.test", DNSRecordType(999))] {
            let (_, nodata) = try await get(service, try query(name, type))
            XCTAssertEqual(nodata.rcode, .noError, "\(name) \(type)")
            XCTAssertTrue(nodata.answers.isEmpty, "\(name) \(type)")
            XCTAssertEqual(nodata.authorities.first?.type, .SOA, "\(name) \(type)")
        }
        let (_, outside) = try await get(service, try query("example.org", .A))
        XCTAssertEqual(outside.rcode, .nameError)
        XCTAssertTrue(outside.authorities.isEmpty)
    }

    func testWildcardsAAAAAndEDNSEcho() async throws {
        let service = try startService()
        let (_, wild) = try await get(service, try query("deep.x.wild.example.test", .A, edns: DNSEDNS(udpPayloadSize: 4096)))
        XCTAssertEqual(wild.answers.first?.name, try DNSName("deep.x.wild.example.test"))
        XCTAssertEqual(wild.answers.first?.data, .a([192, 0, 2, 9]))
        XCTAssertNotNil(wild.edns)
        let (_, v6) = try await get(service, try query("www.example.test", .AAAA))
        XCTAssertEqual(v6.answers.map(\.data), [.aaaa(HTTPDNSIPAddress("2001:db8::1")!.bytes)])
        XCTAssertNil(v6.edns)
        var future = DNSEDNS()
        future.version = 1
        let (_, badvers) = try await get(service, try query("www.example.test", .A, edns: future))
        XCTAssertEqual(badvers.edns?.extendedRCode, 1)
        XCTAssertTrue(badvers.answers.isEmpty)
    }

    func testPOSTAndPaddedBase64() async throws {
        let service = try startService()
        let bytes = try query("www.example.test", .A)
        let posted = try await fetch(
            base(service) + "/dns-query", method: "POST", headers: ["content-type": "application/dns-message"], body: Data(bytes))
        XCTAssertEqual(posted.statusCode, 200)
        XCTAssertEqual(try DNSMessage(decoding: [UInt8](posted.body)).answers.count, 2)
        let padded = Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
        XCTAssertTrue(padded.hasSuffix("="))
        let response = try await fetch(base(service) + "/dns-query?dns=" + padded.replacingOccurrences(of: "=", with: "%3D"))
        XCTAssertEqual(response.statusCode, 200)
    }

    func testClientFormatsResolveThroughTheServer() async throws {
        let url = base(try startService()) + "/dns-query"
        for kind in ["doh", "doh-post", "doh-json"] {
            let client = try resolver("\(kind)=\(url)")
            let both = try await client.resolve("alias.example.test", family: .both)
            XCTAssertEqual(both.ipv4, ips(["192.0.2.1", "192.0.2.2"]), kind)
            XCTAssertEqual(both.ipv6, ips(["2001:db8::1"]), kind)
            await assertResolveFails(client, "nowhere.example.test", code: .nameNotFound)
            await assertResolveFails(client, "v4only.example.test", family: .ipv6, code: .noAddress)
        }
    }

    func testExactJSONAnswer() async throws {
        let service = try startService()
        let response = try await fetch(base(service) + "/dns-query?name=alias.example.test&type=AAAA")
        XCTAssertEqual(response.statusCode, 200)
        XCTAssertEqual(response.header("content-type"), "application/dns-json")
        XCTAssertEqual(response.header("cache-control"), "max-age=90")
        XCTAssertEqual(text(response), """
            {"Status":0,"TC":false,"RD":true,"RA":true,"AD":false,"CD":false,"Question":[{"name":"alias.example.test.","type":28}],\
            "Answer":[{"name":"alias.example.test.","type":5,"TTL":90,"data":"www.example.test."},\
            {"name":"www.example.test.","type":28,"TTL":120,"data":"2001:db8::1"}]}
            """)
        let nx = try await fetch(base(service) + "/resolve?name=nowhere.example.test&type=1")
        XCTAssertTrue(text(nx).hasPrefix(#"{"Status":3,"#), text(nx))
        XCTAssertTrue(text(nx).contains(#""Authority":[{"name":"example.test.","type":6,"TTL":60,"#), text(nx))
    }

    func testHardeningStatuses() async throws {
        let url = base(try startService()) + "/dns-query"
        let valid = Data(try query("www.example.test", .A))
        let put = try await fetch(url, method: "PUT", headers: ["content-type": "application/dns-message"], body: valid)
        XCTAssertEqual(put.statusCode, 405)
        XCTAssertEqual(put.header("allow"), "GET, POST")
        let wrongType = try await fetch(url, method: "POST", headers: ["content-type": "text/plain"], body: valid)
        XCTAssertEqual(wrongType.statusCode, 415)
        let huge = try await fetch(
            url, method: "POST", headers: ["content-type": "application/dns-message"], body: Data(count: 65_536))
        XCTAssertEqual(huge.statusCode, 413)
        // The HTTP engine may refuse a request line this long itself (414 URI Too Long, or h2o's
        // 413 for a head over its buffer); only a handler-level check sees the exact 413 here.
        let longGET = try await fetch(url + "?dns=" + String(repeating: "A", count: 90_000))
        XCTAssertTrue([413, 414].contains(longGET.statusCode), "\(longGET.statusCode)")
        var noQuestion = DNSMessage()
        noQuestion.recursionDesired = true
        let response = DNSMessage.response(to: DNSMessage.makeQuery(name: try DNSName("a.test"), type: .A))
        let garbage: [(String, [UInt8])] = [
            ("qdcount 0", try noQuestion.encode()),
            ("a response", try response.encode()),
            ("truncated", Array(valid.prefix(20))),
            ("empty", []),
            ("two questions", try DNSMessage(questions: [DNSQuestion(name: try DNSName("a.test"), type: .A),
                                                         DNSQuestion(name: try DNSName("b.test"), type: .A)]).encode()),
        ]
        for (label, bytes) in garbage {
            let posted = try await fetch(url, method: "POST", headers: ["content-type": "application/dns-message"], body: Data(bytes))
            XCTAssertEqual(posted.statusCode, 400, label)
            if !bytes.isEmpty {
                let got = try await fetch(url + "?dns=" + DoHWireFormat.base64URL(bytes))
                XCTAssertEqual(got.statusCode, 400, label)
            }
        }
        let badBase64 = try await fetch(url + "?dns=AAAA*AAA")
        XCTAssertEqual(badBase64.statusCode, 400)
    }

    func testOversizedGETIs413AtTheHandler() throws {
        let service = HTTPDNSService(configuration: HTTPDNSService.Configuration(zone: try makeZone()))
        let encoded = String(repeating: "A", count: 90_000)
        let request = HTTPServer.Request(
            method: "GET", path: "/dns-query", query: HTTPServerQuery("dns=" + encoded),
            headers: [], body: Data(), remoteAddress: HTTPDNSIPAddress("127.0.0.1"), remotePort: 1, httpVersion: "HTTP/1.1")
        XCTAssertEqual(service.handle(request).status, 413)
    }

    func testEveryTruncationAndByteFlipOfAQueryIsAnsweredWithoutACrash() throws {
        let service = HTTPDNSService(configuration: HTTPDNSService.Configuration(zone: try makeZone()))
        let bytes = try query("www.example.test", .A, edns: DNSEDNS())
        func post(_ body: [UInt8]) -> Int {
            let request = HTTPServer.Request(
                method: "POST", path: "/dns-query",
                headers: [HTTPServer.Header(name: "Content-Type", value: "application/dns-message")],
                body: Data(body), remoteAddress: HTTPDNSIPAddress("127.0.0.1"), remotePort: 1, httpVersion: "HTTP/1.1")
            return service.handle(request).status
        }
        for length in 0..<bytes.count {
            XCTAssertEqual(post(Array(bytes.prefix(length))), 400, "length \(length)")
        }
        var generator = TestRandom()
        for _ in 0..<2_000 {
            var mutated = bytes
            for _ in 0..<Int.random(in: 1...4, using: &generator) {
                mutated[Int.random(in: 0..<mutated.count, using: &generator)] = UInt8.random(in: 0...255, using: &generator)
            }
            XCTAssertTrue([200, 400].contains(post(mutated)), "\(mutated) with \(generator)")
        }
    }
}
