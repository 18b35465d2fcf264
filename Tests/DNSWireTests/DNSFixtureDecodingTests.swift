import DNSWire
import XCTest

/// Decodes real dnsmasq answers (Fixtures/README.md) and checks what the engine reads from them.
final class DNSFixtureDecodingTests: XCTestCase {
    func testSingleA() throws {
        let message = try DNSMessage(decoding: try Fixture.wwwA.bytes())
        XCTAssertTrue(message.isResponse)
        XCTAssertEqual(message.rcode, .noError)
        XCTAssertEqual(message.questions, [DNSQuestion(name: try DNSName("www.example.test"), type: .A)])
        XCTAssertEqual(message.answers.count, 1)
        XCTAssertEqual(message.answers.first?.data, .a([192, 0, 2, 10]))
        XCTAssertEqual(message.answers.first?.ttl, 300)
        XCTAssertEqual(message.edns?.udpPayloadSize, 1232)
        let answer = message.addresses(for: message.questions[0].name)
        XCTAssertEqual(answer.addresses, [[192, 0, 2, 10]])
        XCTAssertEqual(answer.ttl, 300)
        XCTAssertEqual(answer.aliases, [])
    }

    func testSingleAAAA() throws {
        let message = try DNSMessage(decoding: try Fixture.wwwAAAA.bytes())
        let expected: [UInt8] = [0x20, 0x01, 0x0d, 0xb8] + Array(repeating: 0, count: 11) + [0x10]
        XCTAssertEqual(message.answers.first?.data, .aaaa(expected))
        XCTAssertEqual(message.addresses(for: try DNSName("WWW.example.test")).addresses, [expected])
    }

    func testCNAMEChainIsFollowed() throws {
        let message = try DNSMessage(decoding: try Fixture.cnameChainA.bytes())
        XCTAssertEqual(message.answers.map(\.type), [.CNAME, .CNAME, .A])
        let answer = message.addresses(for: try DNSName("alias.example.test"))
        XCTAssertEqual(answer.addresses, [[192, 0, 2, 10]])
        XCTAssertEqual(answer.aliases, [try DNSName("mid.example.test"), try DNSName("www.example.test")])
        XCTAssertEqual(answer.canonicalName, try DNSName("www.example.test"))
        XCTAssertEqual(answer.ttl, 300)
        XCTAssertEqual(message.addresses(for: try DNSName("alias.example.test"), followingCNAMEs: false).addresses, [])
    }

    func testTwoAddressesKeepTheirOrder() throws {
        let message = try DNSMessage(decoding: try Fixture.multiA.bytes())
        XCTAssertEqual(message.addresses(for: try DNSName("multi.example.test")).addresses, [[192, 0, 2, 21], [192, 0, 2, 22]])
    }

    func testNXDOMAINCarriesSOAForNegativeCaching() throws {
        let message = try DNSMessage(decoding: try Fixture.nxdomainSOA.bytes())
        XCTAssertEqual(message.rcode, .nameError)
        XCTAssertTrue(message.isAuthoritative)
        XCTAssertEqual(message.answers, [])
        guard case .soa(let soa) = message.authorities.first?.data else {
            return XCTFail("no SOA in \(message.authorities)")
        }
        XCTAssertEqual(soa.primaryServer, try DNSName("ns.neg.test"))
        XCTAssertEqual(soa.responsible, try DNSName("hostmaster.neg.test"))
        XCTAssertEqual(soa.serial, 2024010101)
        XCTAssertEqual(soa.refresh, 1200)
        XCTAssertEqual(soa.retry, 180)
        XCTAssertEqual(soa.expire, 1209600)
        XCTAssertEqual(soa.minimum, 900)
        XCTAssertEqual(message.negativeTTL, 900)
        XCTAssertEqual(message.addresses(for: try DNSName("nope.neg.test")).ttl, nil)
    }

    func testNegativeTTLIsTheSmallerOfRecordTTLAndMinimum() throws {
        var message = try DNSMessage(decoding: try Fixture.nxdomainSOA.bytes())
        message.authorities[0].ttl = 60
        XCTAssertEqual(message.negativeTTL, 60)
        message.authorities = []
        XCTAssertNil(message.negativeTTL)
    }

    /// Every fixture re-encodes to a message that decodes equal, and compression keeps it no bigger
    /// than dnsmasq's own encoding.
    func testFixturesRoundTrip() throws {
        for fixture in Fixture.allCases {
            let bytes = try fixture.bytes()
            let message = try DNSMessage(decoding: bytes)
            let encoded = try message.encode()
            XCTAssertEqual(try DNSMessage(decoding: encoded), message, fixture.rawValue)
            XCTAssertLessThanOrEqual(encoded.count, bytes.count, fixture.rawValue)
        }
    }

    /// Every proper prefix of every valid answer must throw `truncated`, not crash or succeed.
    func testEveryTruncationThrows() throws {
        for fixture in Fixture.allCases {
            let bytes = try fixture.bytes()
            for length in 0..<bytes.count {
                XCTAssertThrowsError(try DNSMessage(decoding: Array(bytes[0..<length])), "\(fixture) prefix \(length)") {
                    XCTAssertEqual(($0 as? DNSWireError)?.code, .truncated, "\(fixture) prefix \(length): \($0)")
                }
            }
        }
    }

    func testTruncationErrorNamesTheField() throws {
        let bytes = try Fixture.cnameChainA.bytes()
        // Cut inside the A record's RDATA (the last 4 bytes before the 11-byte OPT record).
        let cut = bytes.count - 11 - 2
        XCTAssertThrowsError(try DNSMessage(decoding: Array(bytes[0..<cut]))) { error in
            let wire = error as? DNSWireError
            XCTAssertEqual(wire?.section, .answer)
            XCTAssertEqual(wire?.index, 3)
            XCTAssertEqual(wire?.field, "rdata")
            XCTAssertEqual(wire?.description, "truncated at offset \(cut) in answer 3 rdata")
        }
    }

    func testTrailingBytesAreRejected() throws {
        XCTAssertThrowsError(try DNSMessage(decoding: try Fixture.wwwA.bytes() + [0])) {
            XCTAssertEqual(($0 as? DNSWireError)?.code, .trailingData)
        }
    }
}
