import Foundation
import HTTPDNSCore
import HTTPDNSTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// Row 10: what answering by client network and checking origins cost `httpdns serve` (issue 22).
/// Two `serve` processes answer the same DoH query under the same h2load load as row 8: one from the
/// plain zone (one A record), one from a zone whose name has records per view, with 10,000 CIDR
/// networks in list files, a MaxMind country and ASN database that one view uses (so every query
/// looks the client up in both), and 1,000 addresses health-checked (TCP, every 5 s, as by default)
/// by the second server. The client, 127.0.0.1, falls in a /24 nested in a /16 of two views, so the
/// prefix walk goes 24 levels deep. The two servers alternate round by round.
///
/// Targets: queries per second ≥ 0.95× the plain zone's, CPU per query ≤ 1.05×.
enum ViewsBench {
    static let setups = [
        ServerBench.Setup(id: "10a", title: "views, HTTP/2 TLS, c=16", tls: true, connections: 16),
        ServerBench.Setup(id: "10b", title: "views, HTTP/1.1 plain, c=16", tls: false, connections: 16),
    ]
    /// Checked addresses answered for the bench name (one per view), with a listener each: up.
    static let answered = (1...10).map { HTTPDNSIPAddress("127.3.0.\($0)")! }

    static func run(_ runner: BenchRunner) async throws -> [BenchRow] {
        guard FileManager.default.isExecutableFile(atPath: ServerBench.h2load) else {
            throw BenchFailure("\(ServerBench.h2load) not found: apt-get install --no-install-recommends nghttp2-client")
        }
        let httpdns = try ServerBench.httpdnsExecutable()
        let certificates = try TestCertificates(commonName: "httpdns-bench views CA")
        defer { certificates.remove() }
        let leaf = try certificates.issue(dnsNames: ["localhost"], ipAddresses: [HTTPDNSIPAddress("127.0.0.1")!])
        let directory = certificates.directory

        // The checked origins: listeners that accept and close, one per answered address.
        let sink = try BenchTCPSink(addresses: answered)
        defer { sink.stop() }
        let files = try writeFiles(in: directory, port: sink.port)
        let plain = try BenchServeProcess(
            name: "plain zone", httpdns: httpdns, arguments: ["--zone", files.plainZone], directory: directory,
            certificatePath: leaf.certificatePath, keyPath: leaf.keyPath)
        defer { plain.stop() }
        let views = try BenchServeProcess(
            name: "views zone", httpdns: httpdns, arguments: ["--zone", files.viewsZone, "--views", files.views], directory: directory,
            certificatePath: leaf.certificatePath, keyPath: leaf.keyPath)
        defer { views.stop() }
        // Measured in the steady state: the 990 origins where nothing listens are down once each
        // has failed `fall` (3) probes 5 s apart; until then every change drops the kept answers.
        try await Task.sleep(for: .seconds(runner.options.quick ? 1 : 22))

        let requests = runner.options.quick ? 3_000 : 30_000
        let loadBefore = BenchSystem.loadAverage()
        var rows: [BenchRow] = []
        for setup in setups {
            let targets = [plain.target(tls: setup.tls), views.target(tls: setup.tls)]
            let (figures, failures) = try await ServerBench.alternate(
                runner, setup: setup, targets: targets, requests: requests, directory: directory)
            rows += self.rows(setup, figures: figures, failures: failures)
        }
        ServerBench.noteLoad(&rows, before: loadBefore, row: 10)
        return rows
    }

    static func rows(_ setup: ServerBench.Setup, figures: [[ServerBench.Round]], failures: [String?]) -> [BenchRow] {
        let (base, subject) = (figures[0], figures[1])
        func row(_ suffix: String, _ title: String, unit: String, target: String, _ value: (ServerBench.Round) -> Double,
                 passes: (Double) -> Bool) -> BenchRow {
            let fullTitle = "\(setup.title): \(title), zone with views and checks"
            let baselineTitle = "the plain zone"
            guard failures[1] == nil, failures[0] == nil, !subject.isEmpty, !base.isEmpty else {
                let reason = failures[1].map { "views zone not measured: \($0)" }
                    ?? failures[0].map { "plain zone not measured: \($0)" } ?? "no round finished"
                return BenchRow(
                    id: setup.id + suffix, title: fullTitle, unit: unit, subject: BenchStats(subject.isEmpty ? [0] : subject.map(value)),
                    baselineTitle: baselineTitle, baseline: base.isEmpty ? nil : BenchStats(base.map(value)), target: target,
                    passed: false, note: reason)
            }
            let ratio = BenchStats.ratios(subject.map(value), over: base.map(value))
            return BenchRow(
                id: setup.id + suffix, title: fullTitle, unit: unit, subject: BenchStats(subject.map(value)),
                baselineTitle: baselineTitle, baseline: BenchStats(base.map(value)), ratio: ratio, target: target,
                passed: passes(ratio.median))
        }
        return [
            row("1", "queries per second", unit: "q/s", target: "≥ 0.95×", \.qps, passes: { $0 >= 0.95 }),
            row("2", "CPU per 1,000 queries", unit: "ms", target: "≤ 1.05×", \.cpuMillisecondsPer1k, passes: { $0 <= 1.05 }),
        ]
    }

    /// The plain zone, the zone with views and checks, the views file, its lists and databases.
    static func writeFiles(in directory: URL, port: Int) throws -> (plainZone: String, viewsZone: String, views: String) {
        let name = ServerBench.name
        let plainZone = directory.appendingPathComponent("views-bench-plain.json")
        try #"{"\#(name)": {"A": ["192.0.2.1"], "ttl": 300}}"#.write(to: plainZone, atomically: true, encoding: .utf8)

        // 10,000 networks over ten views, deterministic; 127.0.0.0/24 inside 127.0.0.0/16 for the client.
        var generator = BenchRandom(seed: 22)
        var lists: [[String]] = Array(repeating: [], count: 10)
        lists[0].append("127.0.0.0/24")
        lists[1].append("127.0.0.0/16")
        for index in 2..<10_000 {
            let length = 16 + Int(generator.next() % 9)
            let value = UInt32(truncatingIfNeeded: generator.next()) & (UInt32.max << UInt32(32 - length))
            let first = value >> 24
            guard first != 127, first != 0, first < 224 else { continue }
            let text = "\(value >> 24).\(value >> 16 & 0xff).\(value >> 8 & 0xff).\(value & 0xff)/\(length)"
            lists[index % 10].append(text)
        }
        var viewsJSON: [String] = []
        for (index, list) in lists.enumerated() {
            let file = "carrier-\(index).txt"
            try ("# bench list \(index)\n" + list.joined(separator: "\n") + "\n")
                .write(to: directory.appendingPathComponent(file), atomically: true, encoding: .utf8)
            viewsJSON.append(#"{"name": "carrier-\#(index)", "lists": ["\#(file)"]}"#)
        }
        // The databases: 1,000 networks each; one view by country and one by ASN, both compiled into the views' table
        var country = MMDBWriter()
        var asn = MMDBWriter()
        for index in 0..<1_000 {
            let network = "\(1 + index / 250).\(index % 250).0.0/16"
            country.insert(network, MMDBWriter.country(index % 2 == 0 ? "CN" : "US"))
            asn.insert(network, MMDBWriter.asn(UInt32(4_000 + index)))
        }
        country.insert("127.0.0.0/8", MMDBWriter.country("ZZ"))
        asn.insert("127.0.0.0/8", MMDBWriter.asn(64_512))
        try country.write(to: directory.appendingPathComponent("country.mmdb").path)
        try asn.write(to: directory.appendingPathComponent("asn.mmdb").path)
        viewsJSON.append(#"{"name": "cn", "countries": ["CN"]}"#)
        viewsJSON.append(#"{"name": "as4134", "asns": [4134]}"#)
        let views = directory.appendingPathComponent("views-bench.json")
        try #"{"geoip": ["country.mmdb", "asn.mmdb"], "views": [\#(viewsJSON.joined(separator: ", "))]}"#
            .write(to: views, atomically: true, encoding: .utf8)

        // The bench name: one answered (up) address per carrier view; 990 more names with a checked
        // address each, where nothing listens (down: what a zone with some dead origins looks like).
        let check = #""check": {"type": "tcp", "port": \#(port)}"#
        var entries: [String] = []
        let perView = (0..<10).map { #""carrier-\#($0)": {"A": ["\#(answered[$0])"]}"# }.joined(separator: ", ")
        entries.append(#""\#(name)": {"A": ["\#(answered[0])"], "ttl": 300, \#(check), "views": {\#(perView)}}"#)
        for index in 0..<990 {
            entries.append(#""origin-\#(index).bench.example.test": {"A": ["127.4.\#(index / 250).\#(index % 250 + 1)"], \#(check)}"#)
        }
        let viewsZone = directory.appendingPathComponent("views-bench-zone.json")
        try ("{" + entries.joined(separator: ",\n") + "}").write(to: viewsZone, atomically: true, encoding: .utf8)
        return (plainZone.path, viewsZone.path, views.path)
    }
}

/// A small deterministic generator (SplitMix64), so that every run writes the same lists.
struct BenchRandom {
    private var state: UInt64

    init(seed: UInt64) {
        state = seed
    }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var value = state
        value = (value ^ (value >> 30)) &* 0xBF58_476D_1CE4_E5B9
        value = (value ^ (value >> 27)) &* 0x94D0_49BB_1331_11EB
        return value ^ (value >> 31)
    }
}
