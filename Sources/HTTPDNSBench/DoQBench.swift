import Foundation
import HTTPDNSCore
import HTTPDNSTestSupport

/// Row 13 (issue 34): `httpdns serve`'s DNS over QUIC against its own DNS over TLS, one `serve`
/// with both listeners (`quic://` and `tls://`, the same zone, certificate and process), both loaded
/// by the same client: the bench's own (``EncryptedDNSLoad``: the stub's `doq=` and `dot=` upstream
/// code, certificates verified), 16 connections and 256 queries outstanding in all, alternating
/// rounds. No Debian load tool speaks DoQ; the client's DoT figure is checked against
/// `dnsperf -m dot` at the same concurrency on the same listener (13c).
///
/// Targets: DoQ's queries per second ≥ 0.8× DoT's (13a). 13b (CPU per query of `serve`, DoQ ÷
/// DoT) and 13c are figures for reference.
enum DoQBench {
    static func run(_ runner: BenchRunner) async throws -> [BenchRow] {
        guard FileManager.default.isExecutableFile(atPath: StubBench.dnsperf) else {
            throw BenchFailure("\(StubBench.dnsperf) not found: apt-get install --no-install-recommends dnsperf")
        }
        let certificates = try TestCertificates(commonName: "httpdns-bench DoQ CA")
        defer { certificates.remove() }
        let leaf = try certificates.issue(dnsNames: ["localhost"], ipAddresses: [HTTPDNSIPAddress("127.0.0.1")!])
        let zone = certificates.directory.appendingPathComponent("doq-zone.json")
        try #"{"\#(ServerBench.name)": {"A": ["192.0.2.1"], "ttl": 300}}"#.write(to: zone, atomically: true, encoding: .utf8)
        let loopback = HTTPDNSIPAddress("127.0.0.1")!
        let (dotPort, quicPort) = (try Dnsmasq.freePort(on: loopback), try Dnsmasq.freePort(on: loopback))
        let server = try BenchProcess("httpdns serve (DoT and DoQ)", try ServerBench.httpdnsExecutable(), [
            "serve", "--listen", "tls://127.0.0.1:\(dotPort)", "--listen", "quic://127.0.0.1:\(quicPort)", "--zone", zone.path,
            "--tls-cert", leaf.certificatePath, "--tls-key", leaf.keyPath,
        ])
        defer { server.stop() }
        try server.waitForListener(dotPort)
        let trust = HTTPDNSTrust.caFile(certificates.caCertificatePath)
        let upstreams = ["dot=127.0.0.1:\(dotPort)#localhost", "doq=127.0.0.1:\(quicPort)#localhost"]
        let seconds = runner.options.quick ? 2.0 : 4.0
        // Warm both (the first DoQ handshake included): every query of a short run answered.
        for upstream in upstreams {
            let warm = try EncryptedDNSLoad.run(
                upstream: upstream, trust: trust, connections: 16, outstanding: 16, duration: .milliseconds(500), name: ServerBench.name)
            guard warm.failed == 0, warm.answered > 0 else { throw BenchFailure("\(upstream): \(warm)") }
        }
        let loadBefore = BenchSystem.loadAverage()
        var cpu: [[Double]] = [[], []]
        let variants: [() async throws -> Double] = upstreams.indices.map { index in
            {
                let before = try ServerBench.cpuSeconds(server.pid)
                let outcome = try EncryptedDNSLoad.run(
                    upstream: upstreams[index], trust: trust, connections: 16, outstanding: 256,
                    duration: .milliseconds(Int(seconds * 1000)), name: ServerBench.name)
                let after = try ServerBench.cpuSeconds(server.pid)
                guard outcome.failed == 0, outcome.answered > 0 else { throw BenchFailure("\(upstreams[index]): \(outcome)") }
                cpu[index].append((after - before) * 1_000 / (Double(outcome.answered) / 1_000))
                return outcome.queriesPerSecond
            }
        }
        let results = try await runner.interleave(rounds: runner.options.quick ? 3 : 7, deadline: runner.deadline(seconds: 120), variants)
        // The client checked against dnsperf on the same DoT listener and load.
        let file = try StubBench.queryFile([ServerBench.name], "doq-check.txt", certificates.directory)
        let target = StubBenchServers.Target(name: "httpdns serve", port: dotPort, pid: server.pid)
        var dnsperf: [Double] = [], ours: [Double] = []
        for _ in 0..<(runner.options.quick ? 1 : 3) {
            dnsperf.append(try DoTBench.measure(target, file: file, seconds: Int(seconds)).qps)
            ours.append(try EncryptedDNSLoad.run(
                upstream: upstreams[0], trust: trust, connections: 16, outstanding: 256, duration: .milliseconds(Int(seconds * 1000)),
                name: ServerBench.name).queriesPerSecond)
        }
        var rows = [
            StubBench.compare(
                "13a", "DoQ, c=16: queries per second, httpdns serve", unit: "q/s", results[1], "serve's DoT, same client",
                results[0], target: "≥ 0.8×") { $0 >= 0.8 },
            BenchRow(
                id: "13b", title: "DoQ, c=16: serve's CPU per 1,000 queries", unit: "ms",
                subject: BenchStats(BenchRunner.recorded(cpu[1])), baselineTitle: "serve's DoT, same client",
                baseline: BenchStats(BenchRunner.recorded(cpu[0])),
                ratio: BenchStats.ratios(BenchRunner.recorded(cpu[1]), over: BenchRunner.recorded(cpu[0]))),
            BenchRow(
                id: "13c", title: "check: the bench's DoT client on serve's DoT listener", unit: "q/s", subject: BenchStats(ours),
                baselineTitle: "dnsperf -m dot, same load", baseline: BenchStats(dnsperf), ratio: BenchStats.ratios(ours, over: dnsperf),
                note: "the same 16 connections and 256 queries outstanding; alternating"),
        ]
        ServerBench.noteLoad(&rows, before: loadBefore, row: 13)
        return rows
    }
}
