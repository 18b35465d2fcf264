import DNSWire
import Foundation
import HTTPDNSCore
@testable import HTTPDNSServer
import HTTPDNSTestSupport
import HTTPDNSTransport
import HTTPServing
import XCTest

/// Answers by client network, through the service: every client source in every answer format.
class HTTPDNSServiceViewsTestCase: HTTPDNSServiceTestCase {
    var directory = ""

    override func setUpWithError() throws {
        try super.setUpWithError()
        directory = NSTemporaryDirectory() + "views-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    }

    override func tearDown() {
        try? FileManager.default.removeItem(atPath: directory)
        super.tearDown()
    }

    func file(_ name: String, _ text: String) throws -> String {
        let path = directory + "/" + name
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        return path
    }

    /// The views under test, in declaration order; a view's A record is 192.0.2.(10 + its index).
    static let viewNetworks: [(String, [String])] = [
        ("v4-8", ["10.0.0.0/8"]), ("v4-16", ["10.1.0.0/16"]), ("v4-32", ["10.1.2.3"]),
        ("v6-32", ["2001:db8::/32"]), ("v6-64", ["2001:db8:0:1::/64"]), ("v6-128", ["2001:db8:0:1::1/128"]),
        ("list-a", []), ("list-b", []), ("solo", ["172.16.0.0/12"]),
    ]

    func makeViews() throws -> HTTPDNSViews {
        let listA = try file("list-a.txt", "# list A\r\n198.51.100.0/24\r\n203.0.113.0/24 # second\r\n")
        let listB = try file("list-b.txt", "198.51.100.0/24\n198.51.100.128/25\n")
        return try HTTPDNSViews(Self.viewNetworks.map { name, networks in
            var view = HTTPDNSViews.View(name: name)
            view.networks = networks
            if name == "list-a" { view.lists = [listA] }
            if name == "list-b" { view.lists = [listB] }
            return view
        })
    }

    func makeViewsZone() throws -> HTTPDNSZone {
        let views = Self.viewNetworks.enumerated().map { index, view in "\"\(view.0)\": {\"A\": [\"192.0.2.\(10 + index)\"]}" }
        return try HTTPDNSZone(json: Data("""
            {"www.example.test": {"A": ["192.0.2.1"], "ttl": 60, "views": {\(views.joined(separator: ", "))}},
             "plain.example.test": {"A": ["192.0.2.99"], "ttl": 60}}
            """.utf8))
    }

    /// The A record of view `name` (`default`: the entry's own).
    func address(ofView name: String) -> String {
        guard let index = Self.viewNetworks.firstIndex(where: { $0.0 == name }) else { return "192.0.2.1" }
        return "192.0.2.\(10 + index)"
    }

    /// A wire query for `name` A with a Client Subnet option for `client`/`source` (nil: no option).
    func wireQuery(_ name: String = "www.example.test", subnet client: String? = nil, source: Int? = nil) throws -> [UInt8] {
        var edns = DNSEDNS()
        if let client {
            let address = try XCTUnwrap(HTTPDNSIPAddress(client))
            let isV4 = address.family == .v4
            let length = source ?? (isV4 ? 32 : 128)
            var bytes = Array(address.bytes.prefix((length + 7) / 8))
            if length % 8 != 0 { bytes[bytes.count - 1] &= ~(0xff >> UInt8(length % 8)) }
            let optionLength = 4 + bytes.count
            edns.options = [0, 8, UInt8(optionLength >> 8), UInt8(optionLength & 0xff), 0, isV4 ? 1 : 2, UInt8(length), 0] + bytes
        }
        return DNSMessage.query(name: try DNSName(name), type: .A, id: 0x1234, edns: edns)
    }

    /// The SCOPE PREFIX-LENGTH of a wire answer's Client Subnet option, nil when it has none.
    func scope(_ message: DNSMessage) -> Int? {
        guard let edns = message.edns, case .found(let data) = HTTPDNSClientSubnet.findOption(in: edns.options), data.count >= 4 else {
            return nil
        }
        return Int(data[data.startIndex + 3])
    }
}

final class HTTPDNSServiceViewsTests: HTTPDNSServiceViewsTestCase {
    /// Where the client address comes from.
    enum Source: String, CaseIterable {
        case peer, trustedForwardedFor, untrustedForwardedFor, clientSubnet, dnspodIP, alibabaIP
    }

    enum Format: String, CaseIterable {
        case dnspod, alibaba, dohGet, dohPost, dohJSON, ipList
    }

    /// Each client and the view (and ECS scope, in its own family's bits) it must get.
    static let table: [(client: String, view: String, scope: Int)] = [
        ("10.200.0.1", "v4-8", 9),            // leaves 10.1.0.0/16's path at bit 8
        ("10.0.0.1", "v4-8", 16),             // shares 10.1's first 15 bits
        ("10.1.200.1", "v4-16", 17),
        ("10.1.2.3", "v4-32", 32),
        ("10.1.2.2", "v4-16", 32),            // one bit from 10.1.2.3
        ("2001:db8:ffff::1", "v6-32", 33),
        ("2001:db8:0:1::2", "v6-64", 127),
        ("2001:db8:0:1::1", "v6-128", 128),
        ("2001:db8:0:2::1", "v6-32", 63),
        ("198.51.100.7", "list-a", 25),       // in both lists: list-a is declared first
        ("198.51.100.200", "list-b", 25),     // list-b's /25 is more specific
        ("203.0.113.9", "list-a", 24),
        ("172.20.1.1", "solo", 12),           // nothing inside: the scope is the matched prefix
        ("::ffff:10.1.2.3", "v4-32", 128),    // IPv4-mapped IPv6 matches IPv4 networks
        ("192.0.2.200", "default", 6),        // leaves 198.51.100.0's path at bit 5
        ("2001:db9::1", "default", 32),
    ]

    private func request(
        _ format: Format, source: Source, client: String, service: HTTPDNSService
    ) throws -> HTTPServer.Request? {
        let ecs = source == .clientSubnet
        let wire = format == .dohGet || format == .dohPost
        if ecs != wire, ecs { return nil }
        if source == .dnspodIP, format != .dnspod { return nil }
        if source == .alibabaIP, format != .alibaba { return nil }
        let address = try XCTUnwrap(HTTPDNSIPAddress(client))
        let peer: HTTPDNSIPAddress
        var headers: [HTTPServer.Header] = []
        switch source {
        case .peer: peer = address
        case .trustedForwardedFor, .untrustedForwardedFor:
            peer = source == .trustedForwardedFor ? HTTPDNSIPAddress("127.0.0.1")! : HTTPDNSIPAddress("127.0.0.9")!
            headers.append(.init(name: "X-Forwarded-For", value: "192.0.2.250, \(client)"))
        case .clientSubnet, .dnspodIP, .alibabaIP: peer = HTTPDNSIPAddress("127.0.0.9")!
        }
        let ip = source == .dnspodIP || source == .alibabaIP ? "&ip=" + client.replacingOccurrences(of: ":", with: "%3A") : ""
        let query = try wireQuery(subnet: ecs ? client : nil)
        switch format {
        case .dnspod:
            return HTTPServer.Request(method: "GET", path: "/d", query: HTTPServerQuery("dn=www.example.test" + ip), headers: headers, remoteAddress: peer)
        case .alibaba:
            return HTTPServer.Request(method: "GET", path: "/100000/d", query: HTTPServerQuery("host=www.example.test" + ip), headers: headers, remoteAddress: peer)
        case .dohGet:
            return HTTPServer.Request(method: "GET", path: "/dns-query", query: HTTPServerQuery("dns=" + DoHWireFormat.base64URL(query)), headers: headers, remoteAddress: peer)
        case .dohPost:
            headers.append(.init(name: "Content-Type", value: "application/dns-message"))
            return HTTPServer.Request(method: "POST", path: "/dns-query", headers: headers, body: Data(query), remoteAddress: peer)
        case .dohJSON:
            return HTTPServer.Request(method: "GET", path: "/dns-query", query: HTTPServerQuery("name=www.example.test&type=A"), headers: headers, remoteAddress: peer)
        case .ipList:
            return HTTPServer.Request(method: "GET", path: "/ips", query: HTTPServerQuery("host=www.example.test"), headers: headers, remoteAddress: peer)
        }
    }

    /// The A address a response carries (and its ECS scope for wire answers).
    private func answer(_ format: Format, _ response: HTTPServer.Response) throws -> (address: String, scope: Int?, json: [String: Any]?) {
        guard case .data(let body) = response.body else { throw ToolRunner.Failure("the service streamed its answer; an answer is one body") }
        let text = String(decoding: body, as: UTF8.self)
        switch format {
        case .dnspod: return (text, nil, nil)
        case .alibaba, .ipList:
            let json = try XCTUnwrap(JSONSerialization.jsonObject(with: body) as? [String: Any], text)
            return (((json["ips"] as? [String]) ?? []).joined(separator: ","), nil, json)
        case .dohJSON:
            let json = try XCTUnwrap(JSONSerialization.jsonObject(with: body) as? [String: Any], text)
            let records = (json["Answer"] as? [[String: Any]]) ?? []
            return (records.compactMap { $0["data"] as? String }.joined(separator: ","), nil, json)
        case .dohGet, .dohPost:
            let message = try DNSMessage(decoding: [UInt8](body))
            let addresses = message.answers.compactMap { record -> String? in
                if case .a(let bytes) = record.data { return HTTPDNSIPAddress(bytes: bytes)?.description }
                return nil
            }
            return (addresses.joined(separator: ","), scope(message), nil)
        }
    }

    func testEveryClientSourceInEveryFormatGetsItsViewAtEveryBoundary() throws {
        let views = try makeViews()
        let zone = try makeViewsZone()
        var trusting = HTTPDNSService.Configuration(zone: zone)
        trusting.views = views
        trusting.trustedProxies = try HTTPDNSTrustedProxies(["127.0.0.1/32"])
        let trustingService = HTTPDNSService(configuration: trusting)
        var plain = trusting
        plain.trustedProxies = HTTPDNSTrustedProxies()
        let plainService = HTTPDNSService(configuration: plain)
        var checked = 0
        for (client, view, scope) in Self.table {
            for source in Source.allCases {
                for format in Format.allCases {
                    let service = source == .untrustedForwardedFor ? plainService : trustingService
                    guard let request = try request(format, source: source, client: client, service: service) else { continue }
                    let label = "\(client) via \(source) as \(format)"
                    let response = service.handle(request)
                    XCTAssertEqual(response.status, 200, label)
                    let got = try answer(format, response)
                    // An untrusted header is ignored: the peer (127.0.0.9) gets the default view.
                    let expectedView = source == .untrustedForwardedFor ? "default" : view
                    XCTAssertEqual(got.address, address(ofView: expectedView), label)
                    if format == .alibaba {
                        // client_ip stays the requester's address (the peer or the trusted proxy's word).
                        let expected = source == .peer || source == .trustedForwardedFor ? HTTPDNSIPAddress(client)!.description : "127.0.0.9"
                        XCTAssertEqual(got.json?["client_ip"] as? String, expected, label)
                    }
                    if source == .clientSubnet {
                        XCTAssertEqual(got.scope, scope, "ECS scope of \(label)")
                    } else if format == .dohGet || format == .dohPost {
                        XCTAssertNil(got.scope, "no ECS option in the query, none in the answer: \(label)")
                    }
                    checked += 1
                }
            }
        }
        XCTAssertEqual(checked, Self.table.count * (3 * 6 + 2 + 1 + 1))
    }

    func testAnECSAnswerForANameWithoutViewsHasScopeZeroAndABadOptionIsFORMERR() throws {
        var configuration = HTTPDNSService.Configuration(zone: try makeViewsZone())
        configuration.views = try makeViews()
        let service = HTTPDNSService(configuration: configuration)
        func post(_ bytes: [UInt8], from peer: String = "127.0.0.9") throws -> DNSMessage {
            let response = service.handle(HTTPServer.Request(
                method: "POST", path: "/dns-query", headers: [.init(name: "Content-Type", value: "application/dns-message")],
                body: Data(bytes), remoteAddress: HTTPDNSIPAddress(peer)))
            guard case .data(let body) = response.body else { throw ToolRunner.Failure("the service streamed its answer; an answer is one body") }
            return try DNSMessage(decoding: [UInt8](body))
        }
        // The answer does not depend on the view: scope 0 (RFC 7871 §7.2.1), family and address echoed.
        let plain = try post(try wireQuery("plain.example.test", subnet: "10.1.2.3", source: 24))
        XCTAssertEqual(scope(plain), 0)
        guard let edns = plain.edns, case .found(let data) = HTTPDNSClientSubnet.findOption(in: edns.options) else {
            return XCTFail("no ECS option in the answer")
        }
        XCTAssertEqual(Array(data), [0, 1, 24, 0, 10, 1, 2])
        // NXDOMAIN: scope 0 (§7.4).
        XCTAssertEqual(scope(try post(try wireQuery("nowhere.example.test", subnet: "10.1.2.3"))), 0)
        // A /24 source inside the /16 view: the view of 10.1.2.0, its scope longer than the source (§7.2.1).
        let short = try post(try wireQuery(subnet: "10.1.2.3", source: 24))
        XCTAssertEqual(short.answers.first?.data, .a([192, 0, 2, 11]))
        XCTAssertEqual(scope(short), 31)
        // Source 0 (RFC 7871 §7.1.2): the client asks that no address be used. The answer is the
        // default view's, which fits every client, so scope 0 is true; never the peer's view, whose
        // records with scope 0 would tell every cache downstream they fit other views' clients too.
        let optOut = try post(try wireQuery(subnet: "10.1.2.3", source: 0))
        XCTAssertEqual(optOut.answers.first?.data, .a([192, 0, 2, 1]))
        XCTAssertEqual(scope(optOut), 0)
        let fromAView = try post(try wireQuery(subnet: "10.1.2.3", source: 0), from: "10.1.2.3")
        XCTAssertEqual(fromAView.answers.first?.data, .a([192, 0, 2, 1]), "the default view's record, not the peer's view's")
        XCTAssertEqual(scope(fromAView), 0)
        // Without the option the same peer gets its own view (and no ECS option back).
        let peerView = try post(try wireQuery(), from: "10.1.2.3")
        let ownView = try XCTUnwrap(address(ofView: "v4-32").split(separator: ".").last.flatMap { UInt8($0) })
        XCTAssertEqual(peerView.answers.first?.data, .a([192, 0, 2, ownView]))
        XCTAssertNil(scope(peerView))
        // RFC 7871 §6: bits past the source prefix, a non-zero scope, a wrong address length, an unknown family.
        for option: [UInt8] in [[0, 1, 24, 0, 10, 1, 2, 3], [0, 1, 24, 0, 10, 1, 3 | 0], [0, 1, 23, 0, 10, 1, 3], [0, 1, 24, 8, 10, 1, 2],
                                [0, 1, 33, 0, 10, 1, 2, 3, 4], [0, 3, 0, 0], [0, 1]] {
            var edns = DNSEDNS()
            edns.options = [0, 8, 0, UInt8(option.count)] + option
            let message = try post(DNSMessage.query(name: try DNSName("www.example.test"), type: .A, id: 1, edns: edns))
            if option == [0, 1, 24, 0, 10, 1, 3 | 0] {
                XCTAssertEqual(message.rcode, .noError, "\(option)")
            } else {
                XCTAssertEqual(message.rcode, .formatError, "\(option)")
            }
        }
    }

    func testKeptWireAnswersNeverCrossViews() throws {
        var configuration = HTTPDNSService.Configuration(zone: try makeViewsZone())
        configuration.views = try makeViews()
        configuration.trustedProxies = try HTTPDNSTrustedProxies(["127.0.0.1/32"])
        let service = HTTPDNSService(configuration: configuration)
        let query = try wireQuery()
        let ecsQuery = try wireQuery(subnet: "10.1.2.3")
        for round in 0..<3 {
            for (client, view, _) in Self.table {
                for bytes in [query, ecsQuery] {
                    let response = service.handle(HTTPServer.Request(
                        method: "POST", path: "/dns-query",
                        headers: [.init(name: "Content-Type", value: "application/dns-message"), .init(name: "X-Forwarded-For", value: client)],
                        body: Data(bytes), remoteAddress: HTTPDNSIPAddress("127.0.0.1")))
                    guard case .data(let body) = response.body else { return XCTFail() }
                    let message = try DNSMessage(decoding: [UInt8](body))
                    let expected = bytes == ecsQuery ? "v4-32" : view
                    XCTAssertEqual(message.answers.first?.data, .a(HTTPDNSIPAddress(address(ofView: expected))!.bytes), "\(client) round \(round)")
                    XCTAssertEqual(message.id, 0x1234)
                }
            }
        }
        // One kept answer per view for the plain query; the ECS query's view is its subnet's, whoever asks.
        XCTAssertEqual(service.keptWireAnswers, Set(Self.table.map(\.view)).count + 1)
    }

    func testAZoneNamingAnUndefinedViewIsRefusedAndReloadSwapsZoneAndViewsTogether() throws {
        var configuration = HTTPDNSService.Configuration(zone: try makeViewsZone())
        let refused = HTTPDNSService(configuration: configuration)
        XCTAssertThrowsError(try refused.start()) { error in
            XCTAssertEqual((error as? HTTPDNSServiceError)?.code, .invalidZone)
            XCTAssertTrue((error as? HTTPDNSServiceError)?.detail.contains("is not defined (no views are configured)") ?? false, "\(error)")
        }
        configuration.views = try makeViews()
        let service = HTTPDNSService(configuration: configuration)
        func get(_ client: String) -> String {
            let response = service.handle(HTTPServer.Request(
                method: "GET", path: "/d", query: HTTPServerQuery("dn=www.example.test"), remoteAddress: HTTPDNSIPAddress(client)))
            guard case .data(let body) = response.body else { return "stream" }
            return String(decoding: body, as: UTF8.self)
        }
        XCTAssertEqual(get("10.1.2.3"), "192.0.2.12")
        // A zone naming a view the new views lack: nothing changes.
        var onlyOne = HTTPDNSViews.View(name: "v4-8")
        onlyOne.networks = ["10.0.0.0/8"]
        let smaller = try HTTPDNSViews([onlyOne])
        XCTAssertThrowsError(try service.reload(zone: service.zone, views: smaller))
        XCTAssertEqual(service.views.names.count, Self.viewNetworks.count + 1)
        XCTAssertEqual(get("10.1.2.3"), "192.0.2.12")
        // Zone and views that fit go in together.
        let zone = try HTTPDNSZone(json: Data(#"{"www.example.test": {"A": ["192.0.2.1"], "views": {"v4-8": {"A": ["198.51.100.8"]}}}}"#.utf8))
        try service.reload(zone: zone, views: smaller)
        XCTAssertEqual(get("10.1.2.3"), "198.51.100.8")
        XCTAssertEqual(get("172.20.1.1"), "192.0.2.1")
    }
}
