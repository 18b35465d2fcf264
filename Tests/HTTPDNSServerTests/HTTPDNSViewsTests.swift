import Foundation
import HTTPDNSCore
@_spi(HTTPDNSPackage) import HTTPDNSOperations
@testable import HTTPDNSServer
import HTTPDNSTestSupport
import XCTest

/// Views without sockets: the MaxMind DB reader against databases the tests write, the matching
/// rules, the views file and zone entries per view.
final class HTTPDNSViewsTests: XCTestCase {
    private var directory = ""

    override func setUpWithError() throws {
        directory = NSTemporaryDirectory() + "views-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    }

    override func tearDown() {
        try? FileManager.default.removeItem(atPath: directory)
        super.tearDown()
    }

    private func file(_ name: String, _ text: String) throws -> String {
        let path = directory + "/" + name
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        return path
    }

    /// A country database: 1.0.0.0/8 CN with 1.2.3.0/24 JP inside, 2400::/12 CN; and an ASN database.
    private func databases(recordSize: Int = 24) throws -> (country: String, asn: String) {
        var country = MMDBWriter(recordSize: recordSize)
        country.databaseType = "Test-Country"
        country.insert("1.0.0.0/8", MMDBWriter.country("CN"))
        country.insert("1.2.3.0/24", MMDBWriter.country("JP"))
        country.insert("2400::/12", MMDBWriter.country("CN"))
        let countryPath = directory + "/country-\(recordSize).mmdb"
        try country.write(to: countryPath)
        var asn = MMDBWriter(recordSize: recordSize)
        asn.insert("1.1.0.0/16", MMDBWriter.asn(4134, "CHINANET"))
        asn.insert("2400:1000::/20", MMDBWriter.asn(4812))
        let asnPath = directory + "/asn-\(recordSize).mmdb"
        try asn.write(to: asnPath)
        return (countryPath, asnPath)
    }

    func testTheWriterMakesDatabasesLibmaxminddbReads() throws {
        for recordSize in [24, 28] {
            let (countryPath, asnPath) = try databases(recordSize: recordSize)
            let country = try HTTPDNSMaxMindDB(path: countryPath)
            XCTAssertEqual(country.databaseType, "Test-Country")
            XCTAssertEqual(country.ipVersion, 6)
            func record(_ database: HTTPDNSMaxMindDB, _ address: String) throws -> HTTPDNSMaxMindDB.Record {
                try database.lookup(HTTPDNSIPAddress(address)!)
            }
            // The record's network is where the tree ends: 1.9.9.9 leaves 1.2.3.0/24's path at bit 12.
            XCTAssertEqual(try record(country, "1.9.9.9"), .init(found: true, prefixLength: 13, country: "CN"))
            XCTAssertEqual(try record(country, "1.200.0.1"), .init(found: true, prefixLength: 9, country: "CN"))
            XCTAssertEqual(try record(country, "1.2.3.4"), .init(found: true, prefixLength: 24, country: "JP"))
            // 1.2.4.1 is in 1.0.0.0/8's record, but the tree around 1.2.3.0/24 splits until bit 22.
            XCTAssertEqual(try record(country, "1.2.4.1"), .init(found: true, prefixLength: 22, country: "CN"))
            XCTAssertEqual(try record(country, "::ffff:1.2.3.4"), .init(found: true, prefixLength: 24, country: "JP"))
            XCTAssertEqual(try record(country, "2400:1::1"), .init(found: true, prefixLength: 12, country: "CN"))
            XCTAssertEqual(try record(country, "8.8.8.8").found, false)
            let asn = try HTTPDNSMaxMindDB(path: asnPath)
            XCTAssertEqual(try record(asn, "1.1.200.1"), .init(found: true, prefixLength: 16, asn: 4134))
            XCTAssertEqual(try record(asn, "2400:1abc::1"), .init(found: true, prefixLength: 20, asn: 4812))
            XCTAssertEqual(try record(asn, "1.2.3.4").found, false)
        }
    }

    func testABadDatabaseIsRefusedNamingTheFile() throws {
        let (countryPath, _) = try databases()
        let bytes = try Data(contentsOf: URL(fileURLWithPath: countryPath))
        let cases: [(String, Data)] = [
            ("empty", Data()), ("text", Data("not a database".utf8)), ("truncated", bytes.prefix(bytes.count / 3)),
            ("no-metadata", bytes.prefix(bytes.count - 40)),
        ]
        for (name, data) in cases {
            let path = directory + "/\(name).mmdb"
            try data.write(to: URL(fileURLWithPath: path))
            XCTAssertThrowsError(try HTTPDNSMaxMindDB(path: path), name) { error in
                let error = error as? HTTPDNSServiceError
                XCTAssertEqual(error?.code, .invalidConfiguration)
                XCTAssertTrue(error?.detail.hasPrefix(path + ":") ?? false, "\(String(describing: error))")
            }
        }
        XCTAssertThrowsError(try HTTPDNSMaxMindDB(path: directory + "/missing.mmdb"))
    }

    private func matcher(_ views: [HTTPDNSViews.View], geoIP: [String] = []) throws -> HTTPDNSViewMatcher {
        try HTTPDNSViews(views, geoIPDatabases: geoIP).matcher
    }

    private func view(_ name: String, networks: [String] = [], countries: [String] = [], asns: [UInt32] = []) -> HTTPDNSViews.View {
        var view = HTTPDNSViews.View(name: name)
        view.networks = networks
        view.countries = countries
        view.asns = asns
        return view
    }

    func testTheMostSpecificMatchWinsThenCIDRThenASNThenCountryThenDeclarationOrder() throws {
        let (countryPath, asnPath) = try databases()
        let matcher = try matcher([
            view("country-cn", countries: ["cn"]),
            view("asn-4134", asns: [4134]),
            view("wide", networks: ["1.0.0.0/8"]),
            view("japan", countries: ["JP"]),
            view("tie-asn-net", networks: ["1.1.0.0/16"]),
            view("later-same-net", networks: ["1.1.0.0/16", "9.9.9.9"]),
            view("upper-half", networks: ["1.128.0.0/9"]),
        ], geoIP: [countryPath, asnPath])
        func name(_ address: String) -> String { matcher.names[matcher.match(HTTPDNSIPAddress(address)).index] }
        // 1.9.9.9: country CN's record is 1.8.0.0/13, longer than the /8 network: the country wins.
        XCTAssertEqual(name("1.9.9.9"), "country-cn")
        // 1.200.0.1: CN's record 1.128.0.0/9 ties the /9 network: the network wins the tie.
        XCTAssertEqual(name("1.200.0.1"), "upper-half")
        // 1.2.3.4: JP's /24 record is longer than the /8 network.
        XCTAssertEqual(name("1.2.3.4"), "japan")
        // 1.1.1.1: ASN 4134's /16 ties the /16 network: the network wins; of two views with it, the first.
        XCTAssertEqual(name("1.1.1.1"), "tie-asn-net")
        XCTAssertEqual(name("9.9.9.9"), "later-same-net")
        XCTAssertEqual(name("2400:1::1"), "country-cn")
        // 2400:1000::/20 has ASN 4134? No: 4812, which no view names; the country's /12 matches.
        XCTAssertEqual(name("2400:1abc::1"), "country-cn")
        XCTAssertEqual(name("8.8.8.8"), "default")
        XCTAssertEqual(matcher.match(nil).index, matcher.defaultIndex)
        // The scope covers every input (the tables and both databases).
        XCTAssertEqual(matcher.match(HTTPDNSIPAddress("1.9.9.9")).scope, 13)
        XCTAssertEqual(matcher.match(HTTPDNSIPAddress("1.1.1.1")).scope, 16)
    }

    /// The matcher reads the databases whole when it is made; per query it walks one table. It must
    /// pick what per-query lookups in libmaxminddb would: the reference below is the rule as written
    /// (the longest of the networks' match and each database's record for the address, ties to
    /// network, then ASN, then country, then declaration order), over random databases and clients.
    func testCompiledDatabasesPickWhatLibmaxminddbLookupsPick() throws {
        var random = TestRandom()
        func randomNetwork(v4: Bool) -> String {
            if v4 {
                let length = Int.random(in: 4...32, using: &random)
                let value = UInt32.random(in: 0...UInt32.max, using: &random) & (UInt32.max << UInt32(32 - length))
                return "\(value >> 24).\(value >> 16 & 0xff).\(value >> 8 & 0xff).\(value & 0xff)/\(length)"
            }
            let length = Int.random(in: 8...64, using: &random)
            let high = UInt64.random(in: 0...UInt64.max, using: &random) & (UInt64.max << UInt64(64 - length))
            let groups = (0..<4).map { String(high >> UInt64(48 - $0 * 16) & 0xffff, radix: 16) }
            return groups.joined(separator: ":") + "::/\(length)"
        }
        let codes = ["CN", "JP", "US", "DE"]
        var country = MMDBWriter(recordSize: 28)
        var asn = MMDBWriter()
        for index in 0..<300 {
            country.insert(randomNetwork(v4: index % 3 != 0), MMDBWriter.country(codes[index % codes.count]))
            asn.insert(randomNetwork(v4: index % 3 != 1), MMDBWriter.asn(UInt32(64_500 + index % 7)))
        }
        let (countryPath, asnPath) = (directory + "/random-country.mmdb", directory + "/random-asn.mmdb")
        try country.write(to: countryPath)
        try asn.write(to: asnPath)
        let views = [
            view("cn", countries: ["CN"]), view("as64501", asns: [64_501]), view("jp", countries: ["jp"]),
            view("nets", networks: (0..<40).map { randomNetwork(v4: $0 % 2 == 0) }), view("as64503", asns: [64_503, 64_504]),
        ]
        let matcher = try matcher(views, geoIP: [countryPath, asnPath])
        let databases = [try HTTPDNSMaxMindDB(path: countryPath), try HTTPDNSMaxMindDB(path: asnPath)]
        var networks = HTTPDNSPrefixTable<Int>()
        for (index, view) in views.enumerated() {
            for text in view.networks { networks.insert(try HTTPDNSNetwork(text), index) }
        }
        func reference(_ address: HTTPDNSIPAddress) throws -> (index: Int, length: Int) {
            let found = networks.lookup(address)
            var best: (length: Int, kind: Int, index: Int)? = found.value.map { (found.prefixLength, 0, $0) }
            func consider(_ length: Int, _ kind: Int, _ index: Int) {
                guard let current = best else { return best = (length, kind, index) }
                if length > current.length || (length == current.length && (kind, index) < (current.kind, current.index)) {
                    best = (length, kind, index)
                }
            }
            for database in databases {
                let record = try database.lookup(address)
                guard record.found else { continue }
                if let number = record.asn, let index = views.firstIndex(where: { $0.asns.contains(number) }) {
                    consider(record.prefixLength, 1, index)
                }
                if let code = record.country, let index = views.firstIndex(where: { $0.countries.map { $0.uppercased() }.contains(code) }) {
                    consider(record.prefixLength, 2, index)
                }
            }
            return best.map { ($0.index, $0.length) } ?? (matcher.defaultIndex, 0)
        }
        var claimed = 0
        for round in 0..<3_000 {
            // Clients near the networks (a network's first address with random low bits) and anywhere.
            let base = HTTPDNSNetwork.parse(Substring(randomNetwork(v4: round % 3 != 0))).map(\.high)
            var bytes: [UInt8]
            if round % 3 != 0 {
                let high = (try? base.get()) ?? 0
                let v4 = UInt32(truncatingIfNeeded: high >> 32) ^ UInt32.random(in: 0...0xff, using: &random)
                bytes = (0..<4).map { UInt8(truncatingIfNeeded: v4 >> UInt32(24 - $0 * 8)) }
                if round % 7 == 0 { bytes = [UInt8](repeating: 0, count: 10) + [0xff, 0xff] + bytes }
            } else {
                let high = ((try? base.get()) ?? 0) ^ UInt64.random(in: 0...0xffff, using: &random)
                bytes = (0..<8).map { UInt8(truncatingIfNeeded: high >> UInt64(56 - $0 * 8)) } + (0..<8).map { _ in UInt8.random(in: 0...255, using: &random) }
            }
            let address = try XCTUnwrap(HTTPDNSIPAddress(bytes: bytes))
            let expected = try reference(address)
            let got = matcher.match(address)
            XCTAssertEqual(got.index, expected.index, "view of \(address) (\(random))")
            XCTAssertEqual(got.prefixLength, expected.length, "matched length of \(address) (\(random))")
            XCTAssertGreaterThanOrEqual(got.scope, got.prefixLength, "scope of \(address)")
            if got.index != matcher.defaultIndex { claimed += 1 }
        }
        XCTAssertGreaterThan(claimed, 300, "the random clients must hit the views, not only the default")
    }

    /// The whole search tree is read when the views are made: damage anywhere in it is refused
    /// then, naming the file, never found by a query later (and never a crash).
    func testADamagedSearchTreeIsRefusedWhenTheViewsAreMade() throws {
        var writer = MMDBWriter()
        for index in 0..<200 { writer.insert("\(10 + index / 50).\(index % 50 * 5).0.0/16", MMDBWriter.country(index % 2 == 0 ? "CN" : "JP")) }
        let good = writer.encode()
        var random = TestRandom()
        var refusedByTheWalk = 0
        for trial in 0..<200 {
            var bytes = good
            // The search tree is the file's start (200 networks: some thousands of bytes).
            for _ in 0..<3 { bytes[Int.random(in: 0..<2_000, using: &random)] = UInt8.random(in: 0...255, using: &random) }
            let path = directory + "/damaged-\(trial).mmdb"
            try Data(bytes).write(to: URL(fileURLWithPath: path))
            do throws(HTTPDNSServiceError) {
                _ = try HTTPDNSViews([view("cn", countries: ["CN"])], geoIPDatabases: [path])
            } catch {
                XCTAssertTrue(error.detail.hasPrefix(path + ": "), error.detail)
                if error.detail.contains("the search tree cannot be read") { refusedByTheWalk += 1 }
            }
        }
        XCTAssertGreaterThan(refusedByTheWalk, 0, "damage past the opening lookups is found by the walk (\(random))")
    }

    func testAnASNBeatsACountryOfTheSameLength() throws {
        var country = MMDBWriter()
        country.insert("5.0.0.0/16", MMDBWriter.country("DE"))
        var asn = MMDBWriter()
        asn.insert("5.0.0.0/16", MMDBWriter.asn(3320))
        try country.write(to: directory + "/c.mmdb")
        try asn.write(to: directory + "/a.mmdb")
        let matcher = try matcher([view("de", countries: ["DE"]), view("dtag", asns: [3320])], geoIP: [directory + "/c.mmdb", directory + "/a.mmdb"])
        let match = matcher.match(HTTPDNSIPAddress("5.0.1.1"))
        XCTAssertEqual(matcher.names[match.index], "dtag")
        XCTAssertEqual(match.prefixLength, 16)
    }

    func testBadViewsAreRefusedWithTheirReason() throws {
        func detail(_ views: [HTTPDNSViews.View], geoIP: [String] = []) -> String {
            do {
                _ = try HTTPDNSViews(views, geoIPDatabases: geoIP)
                return "accepted"
            } catch {
                return error.detail
            }
        }
        XCTAssertEqual(detail([view("default")]), "view \"default\": the name is reserved for clients no view claims")
        XCTAssertEqual(detail([view("a"), view("a")]), "view \"a\": listed twice")
        XCTAssertEqual(detail([view("bad name")]), "view \"bad name\": a name is 1-63 letters, digits, '-', '_' or '.'")
        XCTAssertEqual(detail([view("a", networks: ["10.0.0.1/8"])]), "view \"a\": network \"10.0.0.1/8\": address has bits set past /8")
        XCTAssertEqual(detail([view("a", countries: ["CHN"])], geoIP: ["x"]), "view \"a\": country \"CHN\" is not an ISO 3166-1 two-letter code")
        XCTAssertEqual(detail([view("a", asns: [1])]), "views name countries or ASNs but no MaxMind DB file is given")
        var listed = view("a")
        listed.lists = [try file("bad.txt", "10.0.0.0/8\nnope\n")]
        XCTAssertEqual(detail([listed]), "view \"a\": \(directory)/bad.txt:2: not an IP address or CIDR network: \"nope\"")
        XCTAssertTrue(detail([view("a", asns: [1])], geoIP: [directory + "/none.mmdb"]).hasPrefix(directory + "/none.mmdb: "))
    }

    func testAViewsFileReadsListsAndDatabasesRelativeToItself() throws {
        let (countryPath, asnPath) = try databases()
        _ = try file("carrier-a.txt", "# carrier A\n10.1.0.0/16\n")
        let path = try file("views.json", """
            {"geoip": ["\(URL(fileURLWithPath: countryPath).lastPathComponent)", "\(asnPath)"],
             "views": [{"name": "carrier-a", "lists": ["carrier-a.txt"], "networks": ["10.2.0.0/16"], "countries": ["JP"], "asns": [4134]},
                       {"name": "empty"}]}
            """)
        let views = try HTTPDNSViews(contentsOfFile: path)
        XCTAssertEqual(views.names, ["carrier-a", "empty", "default"])
        XCTAssertEqual(views.geoIPDatabases, [countryPath, asnPath])
        XCTAssertEqual(views.views[0].lists, [directory + "/carrier-a.txt"])
        for address in ["10.1.0.1", "10.2.0.1", "1.2.3.4", "1.1.1.1"] {
            XCTAssertEqual(views.matcher.match(HTTPDNSIPAddress(address)).index, 0, address)
        }
        func detail(_ json: String) throws -> String {
            let path = try file("bad.json", json)
            do {
                _ = try HTTPDNSViews(contentsOfFile: path)
                return "accepted"
            } catch {
                return error.detail.replacingOccurrences(of: path, with: "FILE")
            }
        }
        XCTAssertEqual(try detail(#"{"views": [{"name": "a", "network": ["10.0.0.0/8"]}]}"#),
                       "FILE: view \"a\": unknown member \"network\" (expected name, networks, lists, countries, asns, transfer)")
        XCTAssertEqual(try detail(#"{"view": []}"#), "FILE: unknown member \"view\" (expected geoip, views)")
        XCTAssertEqual(try detail(#"{"views": [{"name": "a", "asns": ["4134"]}]}"#), "FILE: view \"a\": \"asns\" holds numbers 0...4294967295")
        XCTAssertEqual(try detail(#"{"views": [{"networks": []}]}"#), "FILE: views[0] needs a \"name\" string")
        XCTAssertEqual(try detail(#"{"views": [{"name": "a", "lists": ["missing.txt"]}]}"#),
                       "FILE: view \"a\": \(directory)/missing.txt: cannot read the list")
        XCTAssertTrue(try detail("{\"views\": [").hasPrefix("FILE: 1:12: not valid JSON"))
        XCTAssertEqual(try detail("[]"), "FILE: the views file is an object with \"views\"")
    }

    func testZoneEntriesGiveRecordsPerViewAndUndefinedViewsAreRefused() throws {
        let zone = try HTTPDNSZone(json: Data("""
            {"www.example.test": {"A": ["192.0.2.1"], "AAAA": ["2001:db8::1"], "ttl": 60,
                                  "views": {"carrier-a": {"A": ["198.51.100.1"]}, "carrier-b": {"AAAA": ["2001:db8::b"], "ttl": 5}}}}
            """.utf8))
        let entry = try XCTUnwrap(zone.entries["www.example.test"])
        XCTAssertEqual(entry.forView("carrier-a"), HTTPDNSZone.Entry(ipv4: [HTTPDNSIPAddress("198.51.100.1")!], ttl: 60))
        XCTAssertEqual(entry.forView("carrier-b"), HTTPDNSZone.Entry(ipv6: [HTTPDNSIPAddress("2001:db8::b")!], ttl: 5))
        XCTAssertEqual(entry.forView("default").ipv4, [HTTPDNSIPAddress("192.0.2.1")!])
        let views = try HTTPDNSViews([view("carrier-a")])
        XCTAssertThrowsError(try views.check(zone)) { error in
            XCTAssertEqual((error as? HTTPDNSServiceError)?.code, .invalidZone)
            XCTAssertEqual((error as? HTTPDNSServiceError)?.detail,
                           "\"www.example.test\": view \"carrier-b\" is not defined (defined: carrier-a)")
        }
        XCTAssertNoThrow(try HTTPDNSViews([view("carrier-a"), view("carrier-b")]).check(zone))
        XCTAssertThrowsError(try HTTPDNSViews().check(zone))

        func detail(_ json: String) -> String {
            do {
                _ = try HTTPDNSZone(json: Data(json.utf8))
                return "accepted"
            } catch {
                return error.detail
            }
        }
        XCTAssertEqual(detail(#"{"a.test": {"A": ["192.0.2.1"], "views": {"v": {"CNAME": "b.test"}}}}"#),
                       "zone:1:2: \"a.test (view v)\": unknown member \"CNAME\" (expected A, AAAA, ttl)")
        XCTAssertEqual(detail(#"{"a.test": {"A": ["192.0.2.1"], "views": {"v": {"views": {}}}}}"#),
                       "zone:1:2: \"a.test (view v)\": unknown member \"views\" (expected A, AAAA, ttl)")
        XCTAssertEqual(detail(#"{"a.test": {"CNAME": "b.test", "views": {"v": {"A": ["192.0.2.1"]}}}}"#),
                       "zone:1:2: a.test: a CNAME is the same for every view (views give A, AAAA and ttl)")
        XCTAssertEqual(detail(#"{"a.test": {"views": {"v": {"A": ["2001:db8::1"]}}}}"#),
                       "zone:1:2: \"a.test (view v)\": \"2001:db8::1\" is not an IPv4 address")
        XCTAssertEqual(detail(#"{"a.test": {"views": {"default": {"A": []}}}}"#), "zone:1:2: a.test: \"default\" is not a view name")
        XCTAssertEqual(detail(#"{"a.test": {"views": []}}"#), "zone:1:2: \"a.test\": wrong type (views is an object of view names)")
    }
}
