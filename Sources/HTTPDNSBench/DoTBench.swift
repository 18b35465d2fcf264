import Foundation
import HTTPDNSCore
import HTTPDNSStub
import HTTPDNSTestSupport

/// Row 12 (issue 34): `httpdns serve`'s DNS-over-TLS listener against dnsdist's DoT frontend
/// (Debian `dnsdist` 1.7, OpenSSL), both answering the same name from memory as in row 8 (our zone
/// file; dnsdist's `SpoofAction`), loaded by `dnsperf -m dot` (Debian `dnsperf`) with 16 clients
/// (each its own TLS connection) and up to 256 queries outstanding, at dnsperf's own pace. The two
/// servers alternate round by round.
///
/// Per round and server: queries per second (dnsperf's figure) and CPU per 1,000 queries (the
/// server process's CPU-time clock around the run). Targets: qps ≥ 1.3× dnsdist's, CPU per query
/// ≤ 0.7× (what row 8 measures for DoH). dnsperf verifies no certificate; the servers' TLS is what
/// is measured.
///
/// 12c: the stub's `dot=` upstream (issue 34): a cold miss through `httpdns stub` whose names go to
/// `serve`'s DoT listener, against the same DoT exchange made directly with the stub's own upstream
/// code on a warm connection (as 11e does for DoH): ≤ 1.1×; 12c2 the same with the DoT server 1 ms
/// away.
///
/// 12d: hostile connections (issue 34): `dnsperf -m dot`'s load on a `serve` holding 2,000 idle TLS
/// connections and 1,100 TCP connections stalled inside their ClientHello (slowloris), each from
/// an address of its own in 127.0.0.0/8, against the same load on the same server without them:
/// every query answered, and ≥ 0.8× the queries per second.
enum DoTBench {
    static func run(_ runner: BenchRunner) async throws -> [BenchRow] {
        for (path, package) in [(ServerBench.dnsdist, "dnsdist"), (StubBench.dnsperf, "dnsperf")]
        where !FileManager.default.isExecutableFile(atPath: path) {
            throw BenchFailure("\(path) not found: apt-get install --no-install-recommends \(package)")
        }
        let certificates = try TestCertificates(commonName: "httpdns-bench DoT CA")
        defer { certificates.remove() }
        let leaf = try certificates.issue(dnsNames: ["localhost"], ipAddresses: [HTTPDNSIPAddress("127.0.0.1")!])
        let directory = certificates.directory
        let servers = try BenchServerPair(
            httpdns: try ServerBench.httpdnsExecutable(), directory: directory, certificatePath: leaf.certificatePath,
            keyPath: leaf.keyPath, dot: true)
        defer { servers.stop() }
        let (dnsdist, httpdns) = servers.dotTargets()
        let file = try StubBench.queryFile([ServerBench.name], "dot-query.txt", directory)
        for target in [dnsdist, httpdns] {
            let warm = try dotRun(target, ["-d", file, "-n", "100"])
            guard warm.contains("NOERROR 100 (100.00%)") else {
                throw BenchFailure("\(target.name) did not answer every DoT query NOERROR: \(StubBench.summary(warm))")
            }
        }
        let loadBefore = BenchSystem.loadAverage()
        let seconds = runner.options.quick ? 2 : 4
        let targets = [dnsdist, httpdns]
        var rounds: [[StubBench.Round]] = targets.map { _ in [] }
        let variants: [() async throws -> Double] = targets.indices.map { index in
            {
                let round = try measure(targets[index], file: file, seconds: seconds)
                rounds[index].append(round)
                return round.qps
            }
        }
        _ = try await runner.interleave(rounds: runner.options.quick ? 3 : 7, deadline: runner.deadline(seconds: 120), variants)
        let (base, subject) = (BenchRunner.recorded(rounds[0]), BenchRunner.recorded(rounds[1]))
        var rows = [
            StubBench.compare(
                "12a", "DoT, c=16: queries per second, httpdns serve", unit: "q/s", subject.map(\.qps), "dnsdist 1.7 DoT",
                base.map(\.qps), target: "≥ 1.3×") { $0 >= 1.3 },
            StubBench.compare(
                "12b", "DoT, c=16: CPU per 1,000 queries, httpdns serve", unit: "ms", subject.map(\.cpuMillisecondsPer1k),
                "dnsdist 1.7 DoT", base.map(\.cpuMillisecondsPer1k), target: "≤ 0.7×") { $0 <= 0.7 },
        ]
        rows += try await coldMissRows(runner, certificates: certificates, leaf: leaf)
        rows.append(try await crowdRow(runner, certificates: certificates, leaf: leaf, file: file))
        ServerBench.noteLoad(&rows, before: loadBefore, row: 12)
        return rows
    }

    /// 12c: each cold name once through a stub with only a `dot=` upstream (a UDP exchange from
    /// here), alternating with the same DoT exchange made directly with the stub's own upstream code
    /// (`DNSStubTLSUpstream`, certificate verified against the bench CA) on a warm connection; and
    /// the UDP hop to the stub alone (a cached name), to show what the stub adds besides its hop.
    /// 12c2: the same with the DoT server 1 ms away (a relay that holds each answer 1 ms).
    static func coldMissRows(_ runner: BenchRunner, certificates: TestCertificates, leaf: TestCertificates.Leaf) async throws -> [BenchRow] {
        let count = runner.options.quick ? 100 : 600
        let names = (0..<2 * count + 40).map { "c\($0).dot-cold.bench.test" }
        let hot = "hot.dot-cold.bench.test"
        let directory = certificates.directory
        let zone = directory.appendingPathComponent("dot-cold-zone.json")
        let records = (names + [hot]).enumerated().map { #""\#($1)": {"A": ["10.9.\#($0 >> 8).\#($0 & 0xFF)"], "ttl": 3600}"# }
        try ("{" + records.joined(separator: ", ") + "}").write(to: zone, atomically: true, encoding: .utf8)
        let loopback = HTTPDNSIPAddress("127.0.0.1")!
        let (dotPort, httpPort) = (try Dnsmasq.freePort(on: loopback), try Dnsmasq.freePort(on: loopback))
        let httpdns = try ServerBench.httpdnsExecutable()
        let server = try BenchProcess("httpdns serve (DoT, cold names)", httpdns, [
            "serve", "--listen", "tls://127.0.0.1:\(dotPort)", "--listen", "http://127.0.0.1:\(httpPort)", "--zone", zone.path,
            "--tls-cert", leaf.certificatePath, "--tls-key", leaf.keyPath,
        ])
        defer { server.stop() }
        try server.waitForListener(dotPort)
        let relay = try DelayingTCPRelay(target: dotPort, delay: .milliseconds(1))
        defer { relay.stop() }
        var rows: [BenchRow] = []
        for (index, distant) in [false, true].enumerated() {
            let upstreamText = "dot=127.0.0.1:\(distant ? relay.port : dotPort)#localhost"
            let stubPort = try Dnsmasq.freePort(on: loopback)
            let stub = try BenchProcess("httpdns stub (DoT)", httpdns, [
                "stub", "--listen", "127.0.0.1:\(stubPort)", "--provider", "dnspod=http://127.0.0.1:\(httpPort)", "--allow-private",
                "--protect", "nothing.invalid", "--upstream", upstreamText, "--cacert", certificates.caCertificatePath, "--timeout", "2",
            ])
            defer { stub.stop() }
            try stub.waitForListener(stubPort)
            let upstream = try DNSStubUpstreamSpec(parsing: upstreamText).makeUpstream(
                transport: nil, trust: .caFile(certificates.caCertificatePath))
            let socket = try BenchUDPClient(port: stubPort)
            let own = Array(names[(index * (count + 20))..<((index + 1) * (count + 20))])
            // Warm both connections to the DoT server (the stub's and this process's), and cache `hot`.
            for name in own.suffix(20) {
                _ = try await StubBench.directExchange(upstream, name)
                _ = try socket.exchange(name)
            }
            _ = try socket.exchange(hot)
            var direct: [Double] = [], viaStub: [Double] = [], hop: [Double] = []
            for pair in stride(from: 0, to: count - 1, by: 2) {
                direct.append(try await benchMeasureNanoseconds { _ = try await StubBench.directExchange(upstream, own[pair]) } / 1_000)
                viaStub.append(try await benchMeasureNanoseconds { _ = try socket.exchange(own[pair + 1]) } / 1_000)
                hop.append(try await benchMeasureNanoseconds { _ = try socket.exchange(hot) } / 1_000)
            }
            let ratio = BenchStats(viaStub).median / BenchStats(direct).median
            let overhead = BenchStats(viaStub).median - BenchStats(direct).median
            rows.append(BenchRow(
                id: distant ? "12c2" : "12c",
                title: distant ? "cold miss through the stub (dot= upstream 1 ms away)" : "cold miss through the stub (dot= upstream)",
                unit: "µs", subject: BenchStats(viaStub),
                baselineTitle: "the DoT exchange alone", baseline: BenchStats(direct), ratio: BenchStats([ratio]),
                target: "≤ 1.1×", passed: ratio <= 1.1,
                note: "medians over \(viaStub.count) names each, alternating; the stub adds \(Int(overhead.rounded())) µs, "
                    + "of which the UDP round trip to the stub alone (a cached answer, same run) is \(Int(BenchStats(hop).median.rounded())) µs"))
        }
        return rows
    }

    /// What 12d's crowd holds open.
    static let crowdIdle = 2_000
    static let crowdStalled = 1_100

    /// A crowd for 12d, run by python3: `IDLE` finished TLS handshakes that send nothing and
    /// `STALLED` TCP connections that stop inside their ClientHello, connection i from 127.0.(1 +
    /// i / 250).(1 + i % 250); prints one JSON line once all are open, then holds them until killed.
    static let crowdScript = #"""
        import json, socket, ssl, sys, time
        port, ca, idle_count, stalled_count = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
        context = ssl.create_default_context(cafile=ca)
        def source(i):
            return ("127.0.%d.%d" % (1 + i // 250, 1 + i % 250), 0)
        idle, stalled, failed = [], [], []
        for i in range(idle_count):
            try:
                raw = socket.create_connection(("127.0.0.1", port), timeout=15, source_address=source(i))
                idle.append(context.wrap_socket(raw, server_hostname="localhost"))
            except (OSError, ssl.SSLError) as error:
                failed.append(repr(error))
        for i in range(stalled_count):
            try:
                raw = socket.create_connection(("127.0.0.1", port), timeout=15, source_address=source(idle_count + i))
                raw.sendall(b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03")
                stalled.append(raw)
            except OSError as error:
                failed.append(repr(error))
        print(json.dumps({"idle": len(idle), "stalled": len(stalled), "failed": len(failed), "first": failed[:1]}), flush=True)
        while True:
            time.sleep(60)
        """#

    /// 12d: dnsperf over DoT against a `serve` of its own, rounds without the crowd first, then
    /// the crowd opened (its idle and handshake deadlines raised to 60 s so that it stays for the
    /// whole run: the worst case), checked held through `/metrics`, and rounds with it.
    static func crowdRow(_ runner: BenchRunner, certificates: TestCertificates, leaf: TestCertificates.Leaf, file: String) async throws -> BenchRow {
        let loopback = HTTPDNSIPAddress("127.0.0.1")!
        let (dotPort, httpPort) = (try Dnsmasq.freePort(on: loopback), try Dnsmasq.freePort(on: loopback))
        let zone = certificates.directory.appendingPathComponent("bench-zone.json")
        let server = try BenchProcess("httpdns serve (DoT crowd)", try ServerBench.httpdnsExecutable(), [
            "serve", "--listen", "tls://127.0.0.1:\(dotPort)", "--listen", "http://127.0.0.1:\(httpPort)", "--zone", zone.path,
            "--tls-cert", leaf.certificatePath, "--tls-key", leaf.keyPath, "--dot-idle-timeout", "60", "--handshake-timeout", "60",
        ])
        defer { server.stop() }
        try server.waitForListener(dotPort)
        let target = StubBenchServers.Target(name: "httpdns serve", port: dotPort, pid: server.pid)
        let seconds = runner.options.quick ? 2 : 4
        let rounds = runner.options.quick ? 1 : 3
        var calm: [Double] = [], crowded: [Double] = []
        for _ in 0..<rounds { calm.append(try measure(target, file: file, seconds: seconds).qps) }
        let crowd = try RunningTool(
            executable: URL(fileURLWithPath: "/usr/bin/python3"),
            arguments: ["-c", crowdScript, String(dotPort), certificates.caCertificatePath, String(crowdIdle), String(crowdStalled)])
        defer {
            crowd.send(SIGKILL)
            _ = try? crowd.wait(timeout: .seconds(10))
        }
        let line = try crowd.waitForLine(startingWith: "{", timeout: .seconds(120))
        guard let opened = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
              opened["idle"] as? Int == crowdIdle, opened["stalled"] as? Int == crowdStalled
        else { throw BenchFailure("the crowd did not open every connection: \(line)") }
        // The last of the crowd may still wait in the listen queue: polled for up to 10 s.
        var open = try openConnections(httpPort)
        let giveUp = ContinuousClock.now + .seconds(10)
        while open < crowdIdle + crowdStalled, ContinuousClock.now < giveUp {
            usleep(200_000)
            open = try openConnections(httpPort)
        }
        guard open >= crowdIdle + crowdStalled else {
            throw BenchFailure("serve holds \(open) connections, not the crowd's \(crowdIdle + crowdStalled)")
        }
        for _ in 0..<rounds { crowded.append(try measure(target, file: file, seconds: seconds).qps) }
        let stillOpen = try openConnections(httpPort)
        let ratio = BenchStats(crowded).median / BenchStats(calm).median
        return BenchRow(
            id: "12d", title: "DoT q/s with \(crowdIdle) idle TLS connections and \(crowdStalled) stalled handshakes open", unit: "q/s",
            subject: BenchStats(crowded), baselineTitle: "the same load without them", baseline: BenchStats(calm),
            ratio: BenchStats([ratio]), target: "≥ 0.8×, none lost", passed: ratio >= 0.8,
            note: "dnsperf -m dot, 16 clients; no query lost in any round (a loss fails the row); serve held \(open) connections "
                + "before the crowded rounds and \(stillOpen) after")
    }

    /// `httpdns_open_connections` from `serve`'s /metrics on 127.0.0.1:`port`.
    static func openConnections(_ port: UInt16) throws -> Int {
        let client = try RawHTTPClient(port: Int(port))
        guard client.send("GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n") else {
            throw BenchFailure("serve's /metrics did not take the request")
        }
        let body = client.readResponse(timeout: 10).body
        guard let line = body.split(separator: "\n").first(where: { $0.hasPrefix("httpdns_open_connections ") }),
              let value = line.split(separator: " ").last.flatMap({ Double($0) })
        else { throw BenchFailure("no httpdns_open_connections in serve's /metrics") }
        return Int(value)
    }

    /// One round of dnsperf over DoT at its own pace against `target`: queries per second and CPU.
    static func measure(_ target: StubBenchServers.Target, file: String, seconds: Int) throws -> StubBench.Round {
        let before = try ServerBench.cpuSeconds(target.pid)
        let output = try dotRun(target, ["-d", file, "-l", String(seconds), "-c", "16", "-q", "256"])
        let after = try ServerBench.cpuSeconds(target.pid)
        guard let completed = StubBench.figure(output, "Queries completed:"), let qps = StubBench.figure(output, "Queries per second:"),
              completed > 0, StubBench.figure(output, "Queries lost:") == 0
        else {
            throw BenchFailure("\(target.name): dnsperf over DoT lost queries or gave no figures: \(StubBench.summary(output))")
        }
        return StubBench.Round(qps: qps, cpuMillisecondsPer1k: (after - before) * 1_000 / (completed / 1_000))
    }

    static func dotRun(_ target: StubBenchServers.Target, _ arguments: [String]) throws -> String {
        try ServerBench.run(StubBench.dnsperf, ["-m", "dot", "-s", "127.0.0.1", "-p", String(target.port), "-t", "2"] + arguments)
    }
}
