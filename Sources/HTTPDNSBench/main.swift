import Foundation
#if canImport(Glibc)
import Glibc
#endif

// `httpdns-bench`: what protection costs, next to what users would use instead, measured in one run
// on loopback servers the bench starts and stops itself. See BenchOptions.usage.

let options: BenchOptions
do {
    guard let parsed = try BenchOptions.parse(Array(CommandLine.arguments.dropFirst())) else {
        print(BenchOptions.usage)
        exit(0)
    }
    options = parsed
} catch {
    FileHandle.standardError.write(Data("httpdns-bench: \(error)\n\n\(BenchOptions.usage)\n".utf8))
    exit(64)
}

let measurements: [(row: Int, name: String, run: @Sendable (BenchRunner) async throws -> [BenchRow])] = [
    (1, "cache-hit lookup", CacheHitBench.run),
    (2, "cold resolve per provider format", ColdResolveBench.run),
    (3, "10,000 concurrent lookups", CoalescingBench.run),
    (4, "URLSession + protocol", URLSessionBench.run),
    (5, "direct client vs curl CLI", DirectClientBench.run),
    (6, "64 MiB streamed upload", UploadBench.run),
    (7, "memory per cached host", CacheMemoryBench.run),
    (8, "httpdns serve vs dnsdist", ServerBench.run),
    (9, "loopback proxy", ProxyBench.run),
    (10, "httpdns serve: views and health checks vs the plain zone", ViewsBench.run),
    (11, "httpdns stub vs dnsdist and Unbound", StubBench.run),
    (12, "httpdns serve's DoT vs dnsdist's", DoTBench.run),
    (13, "httpdns serve's DoQ vs its DoT", DoQBench.run),
]
signal(SIGPIPE, SIG_IGN)

// `--load`: one run of the DoQ/DoT load client, no table.
if let load = options.load {
    do {
        let outcome = try EncryptedDNSLoad.run(
            upstream: load.upstream, trust: load.caFile.map { .caFile($0) } ?? .system, connections: load.connections,
            outstanding: load.outstanding, duration: .milliseconds(Int(load.seconds * 1000)), name: load.name)
        print("\(load.upstream), \(load.connections) connections, \(load.outstanding) outstanding: \(outcome)")
        exit(outcome.failed == 0 && outcome.answered > 0 ? 0 : 1)
    } catch {
        FileHandle.standardError.write(Data("httpdns-bench: \(error)\n".utf8))
        exit(1)
    }
}

// A child runs one row and hands its figures back in a file (see BenchChild).
if let row = options.childRow, let output = options.childOutput, let measurement = measurements.first(where: { $0.row == row }) {
    do {
        BenchChild.write(rows: try await measurement.run(BenchRunner(options: options)), failure: nil, to: output)
    } catch {
        BenchChild.write(rows: [], failure: String(describing: error), to: output)
    }
    exit(0)
}

// Row 4's baseline is plain URLSession, which on Linux trusts only the system CA bundle. As root, the
// bench re-runs itself in a private mount namespace where a bundle with its test CA is bind-mounted
// over the system one: nothing outside this process tree sees it.
if options.runs(4) || options.runs(9) {
    BenchTrust.enterPrivateMountNamespaceIfPossible()
}

var report = BenchReport(machine: BenchSystem.machine(), quick: options.quick)
for measurement in measurements where options.runs(measurement.row) {
    FileHandle.standardError.write(Data("httpdns-bench: row \(measurement.row): \(measurement.name)…\n".utf8))
    do {
        report.rows += try BenchChild.run(row: measurement.row, options: options)
    } catch {
        report.failures[String(measurement.row)] = String(describing: error)
    }
}
report.machine.loadAfter = BenchSystem.loadAverage()
print(report.table())
if let path = options.jsonPath {
    do {
        try report.write(json: path)
    } catch {
        FileHandle.standardError.write(Data("httpdns-bench: cannot write \(path): \(error)\n".utf8))
        exit(1)
    }
}
let missed = report.missed
if !missed.isEmpty {
    FileHandle.standardError.write(Data(("httpdns-bench: missed:\n" + missed.map { "  \($0)\n" }.joined()).utf8))
    exit(1)
}
