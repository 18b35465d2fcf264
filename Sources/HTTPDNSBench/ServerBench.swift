import Foundation
import HTTPDNSCore
import HTTPDNSTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// Row 8: `httpdns serve` against dnsdist's DoH frontend (Debian `dnsdist`, h2o inside), both
/// answering the same name from memory (our zone file; dnsdist's `SpoofAction`), loaded by h2load
/// (Debian `nghttp2-client`) with RFC 8484 GET queries: HTTP/2 over TLS (a private CA's leaf) and
/// HTTP/1.1 plain, 16 and 256 connections, one request in flight per connection. The two servers
/// alternate round by round in one run.
///
/// Per round and server: queries per second (h2load's own figure, TLS handshakes included), CPU per
/// 1,000 queries (the server process's CPU-time clock, read around that run to the nanosecond,
/// every thread counted), and at c=256 p99 latency (from h2load's per-request `--log-file`, in a
/// second run of its own: the log slows h2load).
/// Targets: qps ≥ 1.0× dnsdist, CPU per query ≤ 1.3× dnsdist, and p99 ≤ dnsdist's at c=256.
/// h2load does not verify certificates (it has no option to); our servers' TLS is what is measured.
enum ServerBench {
    static let dnsdist = "/usr/bin/dnsdist"
    static let h2load = "/usr/bin/h2load"
    static let name = "bench.example.test"
    /// `bench.example.test A`, ID 0, RD: the RFC 8484 GET parameter.
    static let query = "AAABAAABAAAAAAAABWJlbmNoB2V4YW1wbGUEdGVzdAAAAQAB"

    /// One load configuration.
    struct Setup {
        var id: String
        var title: String
        var tls: Bool
        var connections: Int
    }

    static let setups = [
        Setup(id: "8a", title: "HTTP/2 TLS, c=16", tls: true, connections: 16),
        Setup(id: "8b", title: "HTTP/2 TLS, c=256", tls: true, connections: 256),
        Setup(id: "8c", title: "HTTP/1.1 plain, c=16", tls: false, connections: 16),
        Setup(id: "8d", title: "HTTP/1.1 plain, c=256", tls: false, connections: 256),
    ]

    /// What one h2load round measured on one server.
    struct Round {
        var qps: Double
        var cpuMillisecondsPer1k: Double
        var p99Milliseconds: Double
    }

    static func run(_ runner: BenchRunner) async throws -> [BenchRow] {
        for (path, package) in [(dnsdist, "dnsdist"), (h2load, "nghttp2-client")] where !FileManager.default.isExecutableFile(atPath: path) {
            throw BenchFailure("\(path) not found: apt-get install --no-install-recommends \(package)")
        }
        let httpdns = try httpdnsExecutable()
        let certificates = try TestCertificates(commonName: "httpdns-bench server CA")
        defer { certificates.remove() }
        let leaf = try certificates.issue(dnsNames: ["localhost"], ipAddresses: [HTTPDNSIPAddress("127.0.0.1")!])
        let directory = certificates.directory
        let servers = try BenchServerPair(
            httpdns: httpdns, directory: directory, certificatePath: leaf.certificatePath, keyPath: leaf.keyPath)
        defer { servers.stop() }

        let requests = runner.options.quick ? 3_000 : 30_000
        let loadBefore = BenchSystem.loadAverage()
        var rows: [BenchRow] = []
        for setup in setups {
            let targets = [servers.dnsdistTarget(tls: setup.tls), servers.httpdnsTarget(tls: setup.tls)]
            let (figures, failures) = try await alternate(runner, setup: setup, targets: targets, requests: requests, directory: directory)
            rows += self.rows(setup, figures: figures, failures: failures)
        }
        noteLoad(&rows, before: loadBefore, row: 8)
        return rows
    }

    /// Rounds of `setup` against each of `targets` in turn (the baseline first), as many as the
    /// runner gives; a target that fails once is not asked again. Returns the recorded rounds and
    /// each target's failure.
    static func alternate(
        _ runner: BenchRunner, setup: Setup, targets: [BenchServerPair.Target], requests: Int, directory: URL
    ) async throws -> (figures: [[Round]], failures: [String?]) {
        var figures: [[Round]] = targets.map { _ in [] }
        var failures: [String?] = targets.map { _ in nil }
        let variants: [() async throws -> Double] = targets.indices.map { index in
            {
                guard failures[index] == nil else { return 0 }
                do {
                    let round = try measure(targets[index], setup: setup, requests: requests, directory: directory)
                    figures[index].append(round)
                    return round.qps
                } catch {
                    failures[index] = String(describing: error)
                    return 0
                }
            }
        }
        _ = try await runner.interleave(rounds: runner.rounds, deadline: runner.deadline(seconds: 60), variants)
        return (figures.map(BenchRunner.recorded), failures)
    }

    /// Notes on the first missed row (else the first) when the load average says other processes
    /// competed for the CPU: the servers and h2load share the cores with whatever else runs.
    static func noteLoad(_ rows: inout [BenchRow], before loadBefore: String, row: Int) {
        let loadAfter = BenchSystem.loadAverage()
        let cores = ProcessInfo.processInfo.activeProcessorCount
        let busiest = [loadBefore, loadAfter].compactMap { $0.split(separator: " ").first.flatMap { Double($0) } }.max() ?? 0
        guard busiest >= Double(cores) / 2, let index = rows.firstIndex(where: { $0.passed == false }) ?? rows.indices.first else { return }
        let warning = "load average \(loadBefore) before, \(loadAfter) after on \(cores) cores: other processes "
            + "competed for the CPU, so a miss in row \(row) may be the machine's"
        rows[index].note = [rows[index].note, warning].compactMap { $0 }.joined(separator: "; ")
    }

    /// The table rows of one setup: qps and CPU per query, and p99 at c=256.
    static func rows(_ setup: Setup, figures: [[Round]], failures: [String?]) -> [BenchRow] {
        let (base, subject) = (figures[0], figures[1])
        func row(_ suffix: String, _ title: String, unit: String, target: String, _ value: (Round) -> Double,
                 passes: (Double) -> Bool) -> BenchRow {
            let fullTitle = "\(setup.title): \(title), httpdns serve"
            guard failures[1] == nil, failures[0] == nil, !subject.isEmpty, !base.isEmpty else {
                let reason = failures[1].map { "httpdns serve not measured: \($0)" }
                    ?? failures[0].map { "dnsdist not measured: \($0)" } ?? "no round finished"
                return BenchRow(
                    id: setup.id + suffix, title: fullTitle, unit: unit, subject: BenchStats(subject.isEmpty ? [0] : subject.map(value)),
                    baselineTitle: "dnsdist 1.7", baseline: base.isEmpty ? nil : BenchStats(base.map(value)), target: target,
                    passed: false, note: reason)
            }
            let ratio = BenchStats.ratios(subject.map(value), over: base.map(value))
            return BenchRow(
                id: setup.id + suffix, title: fullTitle, unit: unit, subject: BenchStats(subject.map(value)),
                baselineTitle: "dnsdist 1.7", baseline: BenchStats(base.map(value)), ratio: ratio, target: target,
                passed: passes(ratio.median))
        }
        var rows = [
            row("1", "queries per second", unit: "q/s", target: "≥ 1.0×", \.qps, passes: { $0 >= 1.0 }),
            row("2", "CPU per 1,000 queries", unit: "ms", target: "≤ 1.3×", \.cpuMillisecondsPer1k, passes: { $0 <= 1.3 }),
        ]
        if setup.connections >= 256 {
            rows.append(row("3", "p99 latency", unit: "ms", target: "≤ 1.0×", \.p99Milliseconds, passes: { $0 <= 1.0 }))
        }
        return rows
    }

    /// One round against `target`: an h2load run for queries per second and CPU, and at c=256 a
    /// second run with h2load's per-request log for the p99 (writing that log slows h2load, which is
    /// the other end of every request, and so pulls both servers' throughput toward its own limit:
    /// at c=16 over HTTP/2 TLS, 1.06–1.15× by hand became about 1.0×). Throws when any request
    /// fails or the protocol was not negotiated.
    static func measure(_ target: BenchServerPair.Target, setup: Setup, requests: Int, directory: URL) throws -> Round {
        var arguments = ["-n", String(requests), "-c", String(setup.connections), "-m", "1"]
        if !setup.tls { arguments.append("--h1") }
        let url = target.url + "/dns-query?dns=" + query
        let before = try cpuSeconds(target.pid)
        let output = try run(h2load, arguments + [url])
        let after = try cpuSeconds(target.pid)
        try check(output, target: target, setup: setup, requests: requests)
        guard let finished = output.split(separator: "\n").first(where: { $0.hasPrefix("finished in") }),
              let qpsText = finished.split(separator: ",").dropFirst().first?.trimmingCharacters(in: .whitespaces).split(separator: " ").first,
              let qps = Double(qpsText)
        else {
            throw BenchFailure("cannot read h2load's throughput")
        }
        var round = Round(qps: qps, cpuMillisecondsPer1k: (after - before) * 1_000 / (Double(requests) / 1_000), p99Milliseconds: 0)
        guard setup.connections >= 256 else { return round }

        let log = directory.appendingPathComponent("h2load-\(UUID().uuidString).log")
        defer { try? FileManager.default.removeItem(at: log) }
        try check(try run(h2load, arguments + ["--log-file", log.path, url]), target: target, setup: setup, requests: requests)
        let latencies = try String(contentsOf: log, encoding: .utf8).split(separator: "\n").compactMap { line -> Double? in
            let fields = line.split(whereSeparator: { $0 == "\t" || $0 == " " })
            return fields.count >= 3 ? Double(fields[2]) : nil
        }.sorted()
        guard latencies.count == requests else {
            throw BenchFailure("h2load logged \(latencies.count) of \(requests) requests")
        }
        round.p99Milliseconds = latencies[max(0, Int((Double(latencies.count) * 0.99).rounded(.up)) - 1)] / 1_000
        return round
    }

    /// Throws unless h2load negotiated the setup's protocol and every request was answered 2xx.
    static func check(_ output: String, target: BenchServerPair.Target, setup: Setup, requests: Int) throws {
        let protocolLine = output.split(separator: "\n").first { $0.hasPrefix("Application protocol:") }
        let negotiated = protocolLine.map { $0.dropFirst("Application protocol:".count).trimmingCharacters(in: .whitespaces) } ?? "none"
        let expected = setup.tls ? "h2" : "http/1.1"
        guard negotiated == expected else {
            throw BenchFailure("\(target.name) negotiated \(negotiated), not \(expected)")
        }
        guard output.contains("\(requests) succeeded, 0 failed, 0 errored, 0 timeout"),
              output.contains("status codes: \(requests) 2xx")
        else {
            let summary = output.split(separator: "\n").filter { $0.hasPrefix("requests:") || $0.hasPrefix("status codes:") }
            throw BenchFailure("\(target.name): not every query answered 2xx: \(summary.joined(separator: "; "))")
        }
    }

    /// CPU time of process `pid` so far, every thread included, to the nanosecond (its CPU-time
    /// clock): `/proc/PID/stat` counts 10 ms ticks, and a round of 30,000 queries is 40-60 of them,
    /// too coarse for a 5 % target.
    static func cpuSeconds(_ pid: Int32) throws -> Double {
        guard let seconds = ProcessStat.cpuClockSeconds(pid) else {
            throw BenchFailure("server process \(pid) is gone, or its CPU-time clock unreadable")
        }
        return seconds
    }

    /// Runs a tool to completion; returns its standard output, throws with its error output on failure.
    static func run(_ executable: String, _ arguments: [String]) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        let output = Pipe()
        let errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        // Read both while it runs: a full pipe would stall it.
        let errorData = HTTPDNSLock(Data())
        let errorsRead = DispatchSemaphore(value: 0)
        let reader = Thread {
            errorData.withLock { $0 = errors.fileHandleForReading.readDataToEndOfFile() }
            errorsRead.signal()
        }
        reader.start()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        errorsRead.wait()
        guard process.terminationStatus == 0 else {
            let message = String(decoding: errorData.withLock { $0 }.prefix(500), as: UTF8.self)
            throw BenchFailure("\(executable) exited with \(process.terminationStatus): \(message)")
        }
        return String(decoding: data, as: UTF8.self)
    }

    /// `httpdns` next to this bench executable (`make bench` builds both).
    static func httpdnsExecutable() throws -> String {
        let executable = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        let path = URL(fileURLWithPath: executable).deletingLastPathComponent().appendingPathComponent("httpdns").path
        guard FileManager.default.isExecutableFile(atPath: path) else {
            throw BenchFailure("\(path) not found: build it with `swift build -c release --product httpdns` (make bench does)")
        }
        return path
    }
}
