import DNSWire
import DNSStubCore
import HTTPDNSCore
import XCTest

/// Queries and upstream answers for the stub front's tests.
enum StubFixture {
    static func name(_ text: String) -> DNSName { (try? DNSName(text)) ?? .root }

    /// A query as a client sends it.
    static func query(
        _ host: String = "www.example.com", _ type: DNSRecordType = .A, id: UInt16 = 0xBEEF, edns: DNSEDNS? = nil,
        change: (inout DNSMessage) -> Void = { _ in }
    ) -> [UInt8] {
        var message = DNSMessage.makeQuery(name: name(host), type: type, id: id, edns: edns)
        change(&message)
        return (try? message.encode()) ?? []
    }

    /// The request a query reads as; fails the test for anything else.
    static func request(
        _ bytes: [UInt8], transport: DNSStubTransport = .udp, file: StaticString = #filePath, line: UInt = #line
    ) -> DNSStubRequest? {
        guard case .query(let request) = DNSStubRequest.read(bytes, transport: transport) else {
            XCTFail("not a query: \(DNSStubRequest.read(bytes, transport: transport))", file: file, line: line)
            return nil
        }
        return request
    }

    static func a(_ owner: String, _ last: UInt8, ttl: UInt32 = 300) -> DNSRecord {
        DNSRecord(name: name(owner), ttl: ttl, data: .a([192, 0, 2, last]))
    }

    static func soa(_ zone: String = "example.com", ttl: UInt32 = 3600, minimum: UInt32 = 300) -> DNSRecord {
        DNSRecord(name: name(zone), ttl: ttl, data: .soa(DNSSOA(
            primaryServer: name("ns1.\(zone)"), responsible: name("hostmaster.\(zone)"), serial: 1, refresh: 3600,
            retry: 600, expire: 86400, minimum: minimum
        )))
    }

    /// A TXT record whose RDATA is `count` bytes (character-strings of up to 255 bytes each).
    static func txt(_ owner: String, rdataBytes count: Int, ttl: UInt32 = 300) -> DNSRecord {
        var strings: [[UInt8]] = []
        var left = count
        while left > 0 {
            let take = min(255, left - 1)
            strings.append([UInt8](repeating: UInt8(ascii: "x"), count: take))
            left -= take + 1
        }
        return DNSRecord(name: name(owner), ttl: ttl, data: .txt(strings))
    }

    static func decode(_ bytes: [UInt8], file: StaticString = #filePath, line: UInt = #line) -> DNSMessage? {
        do {
            return try DNSMessage(decoding: bytes)
        } catch {
            XCTFail("does not decode: \(error)", file: file, line: line)
            return nil
        }
    }
}
