import Foundation
import HTTPDNS
import HTTPDNSCore
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Row 1: a lookup answered from the cache, in ns per lookup, on 1 and 2 threads.
///
/// The floor is what any cache must pay: a `Dictionary` lookup under the project's lock
/// (`HTTPDNSLock`, a pthread mutex). `Synchronization.Mutex` is shown for reference only (the project
/// does not use it: ThreadSanitizer cannot see its waits on Linux). `getaddrinfo` of a name in
/// `/etc/hosts` is what code without HTTPDNS pays for every connection.
///
/// With 2 threads both run the same loop at once (the lock is contended); the figure is the slower
/// thread's wall time divided by its own lookups, i.e. the latency each caller sees.
enum CacheHitBench {
    static let host = "www.httpdns-bench.example"
    static let hostsFileName = "localhost"

    static func run(_ runner: BenchRunner) async throws -> [BenchRow] {
        let address = HTTPDNSIPAddress("93.184.216.34")!
        // 1,000 more names, asked in turn: more than a thread's hit memo holds, so these hits take
        // the shared cache (the figure for an app that talks to many hosts at once).
        let spread = (0..<1_000).map { "h\($0).spread.httpdns-bench.example" }
        var table = Dictionary(uniqueKeysWithValues: spread.map { ($0, [address]) })
        table[host] = [address]
        var configuration = HTTPDNSConfiguration(resolvers: [HTTPDNSStaticResolver(table, ttl: 86_400)])
        configuration.failover.httpdnsOnly = true
        configuration.localDNS = .custom(HTTPDNSStaticResolver([:]))
        let engine = HTTPDNSEngine(configuration: configuration)
        _ = try await engine.resolve(host)
        for name in spread { _ = try await engine.resolve(name) }
        guard engine.cachedAnswer(host) != nil, engine.cachedAnswer(spread[999]) != nil else {
            throw BenchFailure("the answers did not reach the cache")
        }

        let floor = HTTPDNSLock([host: [address]])
        let mutex = Mutex([host: [address]])
        let ops = runner.options.quick ? 50_000 : 200_000
        let slowOps = ops / 200
        let name = host
        // The same name in 64 strings of their own (none shares another's storage): a caller that
        // builds the name afresh each time (from a URL, say) is not recognised by identity.
        let copies = (0..<64).map { _ in String(decoding: Array(host.utf8), as: UTF8.self) }

        var rows: [BenchRow] = []
        for threads in [1, 2] {
            // Each closure runs the whole loop, so the per-operation cost holds no closure call.
            let variants: [() async throws -> Double] = [
                {
                    await perOp(threads: threads, ops: ops) { ops in
                        for _ in 0..<ops { benchBlackHole(floor.withLock { $0[name] }) }
                    }
                },
                {
                    await perOp(threads: threads, ops: ops) { ops in
                        for _ in 0..<ops { benchBlackHole(mutex.withLock { $0[name] }) }
                    }
                },
                {
                    await perOp(threads: threads, ops: ops) { ops in
                        for _ in 0..<ops { benchBlackHole(try? await engine.resolve(name)) }
                    }
                },
                {
                    await perOp(threads: threads, ops: ops) { ops in
                        for _ in 0..<ops { benchBlackHole(engine.cachedAnswer(name)) }
                    }
                },
                {
                    await perOp(threads: threads, ops: slowOps) { ops in
                        for _ in 0..<ops { benchBlackHole(systemLookup(hostsFileName)) }
                    }
                },
                {
                    await perOp(threads: threads, ops: ops) { ops in
                        for index in 0..<ops { benchBlackHole(try? await engine.resolve(spread[index % spread.count])) }
                    }
                },
                {
                    await perOp(threads: threads, ops: ops) { ops in
                        for index in 0..<ops { benchBlackHole(try? await engine.resolve(copies[index & (copies.count - 1)])) }
                    }
                },
            ]
            let results = try await runner.interleave(
                rounds: runner.rounds, deadline: runner.deadline(seconds: 60), variants)
            let floorStats = BenchStats(results[0])
            let suffix = threads == 1 ? "1 thread" : "2 threads"
            let letters = threads == 1 ? ["a", "b", "c", "d", "e"] : ["f", "g", "h", "i", "j"]
            for (offset, (index, title)) in [(2, "engine.resolve, cache hit"), (3, "engine.cachedAnswer (sync)")].enumerated() {
                let stats = BenchStats(results[index])
                let ratio = BenchStats.ratios(results[index], over: results[0])
                let passed = stats.median <= 100 && ratio.median <= 1.5
                rows.append(BenchRow(
                    id: "1\(letters[offset])", title: "\(title), \(suffix)", unit: "ns/op", subject: stats,
                    baselineTitle: "Dictionary under HTTPDNSLock", baseline: floorStats, ratio: ratio,
                    target: "≤ 100 ns and ≤ 1.5× floor", passed: passed))
            }
            rows.append(BenchRow(
                id: "1\(letters[2])", title: "reference: Dictionary under Synchronization.Mutex, \(suffix)", unit: "ns/op",
                subject: BenchStats(results[1]), baselineTitle: "Dictionary under HTTPDNSLock", baseline: floorStats,
                ratio: BenchStats.ratios(results[1], over: results[0])))
            rows.append(BenchRow(
                id: "1\(letters[3])", title: "reference: getaddrinfo(\"\(hostsFileName)\") from /etc/hosts, \(suffix)",
                unit: "ns/op", subject: BenchStats(results[4]), baselineTitle: "engine.resolve cache hit",
                baseline: BenchStats(results[2]), ratio: BenchStats.ratios(results[4], over: results[2]),
                note: threads == 1 ? "ratio here = getaddrinfo ÷ engine.resolve: how much slower the unprotected lookup is" : nil))
            rows.append(BenchRow(
                id: "1\(letters[4])", title: "reference: engine.resolve, cache hits over 1,000 names in turn, \(suffix)",
                unit: "ns/op", subject: BenchStats(results[5]), baselineTitle: "Dictionary under HTTPDNSLock", baseline: floorStats,
                ratio: BenchStats.ratios(results[5], over: results[0]),
                note: threads == 1 ? "too many names for a thread's 16-slot hit memo: every hit takes the shared cache's lock" : nil))
            rows.append(BenchRow(
                id: "1\(threads == 1 ? "k" : "l")", title: "reference: engine.resolve, cache hit, the name in another String each time, \(suffix)",
                unit: "ns/op", subject: BenchStats(results[6]), baselineTitle: "Dictionary under HTTPDNSLock", baseline: floorStats,
                ratio: BenchStats.ratios(results[6], over: results[0]),
                note: threads == 1 ? "1a asks with one String, which the hit memo recognises by identity; here its bytes are compared" : nil))
        }
        return rows
    }

    /// Runs `loop(ops)` (a loop of `ops` operations) on each of `threads` tasks started together;
    /// returns the slowest task's wall time per operation, in nanoseconds.
    static func perOp(threads: Int, ops: Int, _ loop: @escaping @Sendable (Int) async -> Void) async -> Double {
        let barrier = Barrier()
        let slowest = await withTaskGroup(of: Double.self) { group in
            for _ in 0..<threads {
                group.addTask {
                    // Start together (bounded: 2 s at most) so the lock is really shared.
                    barrier.ready.add(1, ordering: .relaxed)
                    let giveUp = DispatchTime.now().uptimeNanoseconds + 2_000_000_000
                    while barrier.ready.load(ordering: .relaxed) < threads, DispatchTime.now().uptimeNanoseconds < giveUp {}
                    return await benchMeasureNanoseconds { await loop(ops) }
                }
            }
            var slowest = 0.0
            for await elapsed in group { slowest = max(slowest, elapsed) }
            return slowest
        }
        return slowest / Double(max(ops, 1))
    }

    /// Counts the tasks that reached the start line.
    final class Barrier: Sendable {
        let ready = Atomic<Int>(0)
    }

    /// `getaddrinfo(name)` for IPv4 stream sockets, as code without HTTPDNS does before connecting.
    static func systemLookup(_ name: String) -> Int32 {
        var hints = addrinfo()
        hints.ai_family = AF_INET
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var result: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(name, "443", &hints, &result)
        if let result { freeaddrinfo(result) }
        return status
    }
}
