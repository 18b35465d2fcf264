import DNSWire
import XCTest

final class DNSRoundTripTests: XCTestCase {
    /// A response with every decoded RDATA kind, as the HTTPDNS server would build it.
    private func fullResponse() throws -> DNSMessage {
        let query = DNSMessage.makeQuery(name: try DNSName("Alias.Example.com"), type: .A, id: 0x4242, edns: DNSEDNS())
        var message = DNSMessage.response(to: query)
        let www = try DNSName("www.example.com")
        message.answers = [
            DNSRecord(name: try DNSName("alias.example.com"), ttl: 120, data: .cname(www)),
            DNSRecord(name: www, ttl: 60, data: .a([93, 184, 216, 34])),
            DNSRecord(name: www, ttl: 60, data: .aaaa(Array(0..<16))),
            DNSRecord(name: www, ttl: 5, data: .txt([Array("v=spf1 -all".utf8), []])),
            DNSRecord(name: www, ttl: 5, data: .mx(preference: 10, exchange: try DNSName("mail.example.com"))),
            DNSRecord(name: try DNSName("4.3.2.1.in-addr.arpa"), ttl: 5, data: .ptr(www)),
            DNSRecord(name: www, recordClass: .CH, ttl: 7, data: .opaque(DNSRecordType(65), [0, 1, 0])),
        ]
        message.authorities = [
            DNSRecord(name: try DNSName("example.com"), ttl: 3600, data: .ns(try DNSName("ns1.example.com"))),
            DNSRecord(name: try DNSName("example.com"), ttl: 3600, data: .soa(DNSSOA(
                primaryServer: try DNSName("ns1.example.com"), responsible: try DNSName("hostmaster.example.com"),
                serial: 1, refresh: 2, retry: 3, expire: 4, minimum: 5
            ))),
        ]
        message.additionals = [.opt(DNSEDNS(udpPayloadSize: 4096, extendedRCode: 1, version: 0, dnssecOK: true, options: [0, 10, 0, 2, 0xAB, 0xCD]))]
        return message
    }

    func testFullResponseRoundTrips() throws {
        let message = try fullResponse()
        let encoded = try message.encode()
        let decoded = try DNSMessage(decoding: encoded)
        XCTAssertEqual(decoded, message)
        XCTAssertEqual(decoded.edns?.dnssecOK, true)
        XCTAssertEqual(decoded.edns?.extendedRCode, 1)
        XCTAssertEqual(try decoded.encode(), encoded)
        let answer = decoded.addresses(for: try DNSName("alias.example.com"))
        XCTAssertEqual(answer.addresses, [[93, 184, 216, 34], Array(0..<16)])
        XCTAssertEqual(answer.ttl, 60)
    }

    func testNamesAreCompressed() throws {
        let message = try fullResponse()
        let encoded = try message.encode()
        // "example" (any case) appears once in full; every other occurrence is reached through a pointer.
        let needle = Array("xample".utf8)
        let occurrences = (0...(encoded.count - needle.count)).filter { Array(encoded[$0..<($0 + needle.count)]) == needle }
        XCTAssertEqual(occurrences.count, 1)
    }

    /// The full response byte for byte as the writer encoded it when it kept its compression targets
    /// in a table keyed by lower-cased suffixes (before the scan of earlier names on the wire): the
    /// same pointers to the same first copies, mixed case included (`Alias.Example.com` first).
    func testCompressionPicksTheFirstCopyOfTheLongestSuffix() throws {
        let expected = [
            "42428180000100070002000105416c696173074578616d706c6503636f6d0000010001c00c0005000100000078000603",
            "777777c012c02f000100010000003c00045db8d822c02f001c00010000003c0010000102030405060708090a0b0c0d0e",
            "0fc02f0010000100000005000d0b763d73706631202d616c6c00c02f000f0001000000050009000a046d61696cc01201",
            "3401330132013107696e2d61646472046172706100000c0001000000050002c02fc02f00410003000000070003000100",
            "c0120002000100000e100006036e7331c012c0120006000100000e100023c0cc0a686f73746d6173746572c012000000",
            "01000000020000000300000004000000050000291000010080000006000a0002abcd",
        ].joined()
        let encoded = try fullResponse().encode()
        XCTAssertEqual(encoded.map { String(format: "%02x", $0) }.joined(), expected)
    }

    func testUnknownTypeRdataIsNotCompressedAgainst() throws {
        // Opaque RDATA that happens to look like a name must be copied verbatim, not rewritten.
        var message = DNSMessage(id: 1)
        let name = try DNSName("a.test")
        message.answers = [DNSRecord(name: name, ttl: 1, data: .opaque(DNSRecordType(99), [1, 0x61, 4, 0x74, 0x65, 0x73, 0x74, 0]))]
        let encoded = try message.encode()
        XCTAssertEqual(Array(encoded.suffix(8)), [1, 0x61, 4, 0x74, 0x65, 0x73, 0x74, 0])
        XCTAssertEqual(try DNSMessage(decoding: encoded), message)
    }

    func testCNAMELoopYieldsNoAddresses() throws {
        let a = try DNSName("a.test"), b = try DNSName("b.test")
        var message = DNSMessage(id: 1)
        message.answers = [
            DNSRecord(name: a, ttl: 30, data: .cname(b)),
            DNSRecord(name: b, ttl: 20, data: .cname(a)),
            DNSRecord(name: a, ttl: 10, data: .a([1, 1, 1, 1])),
        ]
        let answer = message.addresses(for: a)
        XCTAssertEqual(answer.addresses, [])
        XCTAssertEqual(answer.ttl, 20)
    }

    func testOverlongChainStopsAtTheLimit() throws {
        var message = DNSMessage(id: 1)
        let names = try (0...DNSMessage.maxCNAMEChain + 1).map { try DNSName("n\($0).test") }
        for index in 0..<(names.count - 1) {
            message.answers.append(DNSRecord(name: names[index], ttl: 9, data: .cname(names[index + 1])))
        }
        message.answers.append(DNSRecord(name: names.last!, ttl: 9, data: .a([1, 2, 3, 4])))
        XCTAssertEqual(message.addresses(for: names[0]).addresses, [])
        XCTAssertEqual(message.addresses(for: names[2]).addresses, [[1, 2, 3, 4]])
    }

    func testRecordsOfOtherClassesAndNamesAreIgnored() throws {
        let a = try DNSName("a.test")
        var message = DNSMessage(id: 1)
        message.answers = [
            DNSRecord(name: a, recordClass: .CH, ttl: 1, data: .a([9, 9, 9, 9])),
            DNSRecord(name: try DNSName("other.test"), ttl: 1, data: .a([8, 8, 8, 8])),
            DNSRecord(name: a, ttl: 100, data: .a([1, 2, 3, 4])),
        ]
        let answer = message.addresses(for: a)
        XCTAssertEqual(answer.addresses, [[1, 2, 3, 4]])
        XCTAssertEqual(answer.ttl, 100)
    }
}
