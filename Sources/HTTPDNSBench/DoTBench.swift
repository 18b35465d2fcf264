import Foundation
import HTTPDNSCore
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
        ServerBench.noteLoad(&rows, before: loadBefore, row: 12)
        return rows
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
