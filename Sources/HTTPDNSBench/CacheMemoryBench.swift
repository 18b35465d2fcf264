import Foundation
import HTTPDNS
import HTTPDNSCore
import HTTPDNSTestSupport

/// Row 7: resident memory per cached host with 100,000 hosts in the cache.
///
/// A ``HTTPDNSStaticResolver`` with 100,000 names (`h12345.memory.bench.test`, 24-25 bytes: longer than
/// Swift's 15-byte inline strings, as real host names are) is built first, and its memory is part
/// of the "before" figure. Then an engine with capacity 150,000 resolves every name once, one at a
/// time (so freed lookup tasks are reused rather than piling up), and the RSS growth (`VmRSS` from
/// `/proc/self/status`, after `malloc_trim(0)` on both sides) is divided by 100,000.
enum CacheMemoryBench {
    static let hosts = 100_000

    static func run(_ runner: BenchRunner) async throws -> [BenchRow] {
        let address = HTTPDNSIPAddress("93.184.216.34")!
        let names = (0..<hosts).map { "h\($0).memory.bench.test" }
        let resolver = HTTPDNSStaticResolver(Dictionary(uniqueKeysWithValues: names.map { ($0, [address]) }), ttl: 86_400)
        var perHost: [Double] = []
        var immediate: [Double] = []
        let rounds = runner.options.quick ? 1 : 3
        let deadline = runner.deadline(seconds: 60)
        for round in 0..<rounds {
            if round > 0, ContinuousClock.now > deadline { break }
            var configuration = HTTPDNSConfiguration(resolvers: [resolver])
            configuration.failover.httpdnsOnly = true
            configuration.localDNS = .custom(HTTPDNSStaticResolver([:]))
            configuration.cache.policy.capacity = 150_000
            ProcessMemory.trimHeap()
            let before = ProcessMemory.residentBytes()
            let engine = HTTPDNSEngine(configuration: configuration)
            for name in names {
                _ = try await engine.resolve(name)
            }
            ProcessMemory.trimHeap()
            immediate.append(Double(ProcessMemory.residentBytes() - before) / Double(hosts))
            try await settle()
            let after = ProcessMemory.residentBytes()
            guard engine.cachedAnswer(names[0]) != nil, engine.cachedAnswer(names[hosts - 1]) != nil else {
                throw BenchFailure("the cache did not keep all \(hosts) hosts")
            }
            perHost.append(Double(after - before) / Double(hosts))
            withExtendedLifetime(engine) {}
        }
        let stats = BenchStats(perHost)
        let policy = BenchStats(policyOnly(names, address: address, rounds: rounds))
        let evicting = BenchStats(try await evictingEngine(names, resolver: resolver, rounds: rounds))
        return [
            BenchRow(
                id: "7a", title: "memory per cached host at 100,000 hosts (RSS growth ÷ 100,000)", unit: "bytes",
                subject: stats, target: "≤ 512 bytes", passed: stats.median <= 512,
                note: "measured \(Int(settleSeconds)) s after the last lookup; right after it: \(Int(BenchStats(immediate).median)) bytes/host (each cold lookup's cancelled 1.5 s deadline timer is held by the runtime until it would have fired)"),
            BenchRow(
                id: "7b", title: "reference: HTTPDNSCachePolicy alone, 100,000 direct stores (no engine lookups)",
                unit: "bytes", subject: policy,
                note: "7a − 7b is what the engine's lookup path leaves behind per host, beyond the cache's own storage"),
            BenchRow(
                id: "7c", title: "reference: the same 100,000 lookups with cache capacity 1 (RSS growth ÷ 100,000)",
                unit: "bytes", subject: evicting,
                note: "memory still held after 100,000 lookups whose entries were all evicted: should be near 0; what is left grows with lookups, not with the cache"),
        ]
    }

    static let settleSeconds = 3.0

    /// Waits past the engine's per-attempt deadline (1.5 s) so cancelled deadline timers are gone,
    /// then returns freed memory to the system.
    static func settle() async throws {
        try await Task.sleep(for: .seconds(settleSeconds))
        ProcessMemory.trimHeap()
    }

    /// The engine of 7a with a one-entry cache: every lookup's memory should be freed again.
    static func evictingEngine(_ names: [String], resolver: HTTPDNSStaticResolver, rounds: Int) async throws -> [Double] {
        var results: [Double] = []
        for _ in 0..<rounds {
            var configuration = HTTPDNSConfiguration(resolvers: [resolver])
            configuration.failover.httpdnsOnly = true
            configuration.localDNS = .custom(HTTPDNSStaticResolver([:]))
            configuration.cache.policy.capacity = 1
            ProcessMemory.trimHeap()
            let before = ProcessMemory.residentBytes()
            let engine = HTTPDNSEngine(configuration: configuration)
            for name in names { _ = try await engine.resolve(name) }
            try await settle()
            results.append(Double(ProcessMemory.residentBytes() - before) / Double(hosts))
            withExtendedLifetime(engine) {}
        }
        return results
    }

    /// The same 100,000 entries stored straight into a cache policy value, on this thread: the
    /// cache's own storage cost, without lookup tasks or other threads' heaps.
    static func policyOnly(_ names: [String], address: HTTPDNSIPAddress, rounds: Int) -> [Double] {
        var settings = HTTPDNSCacheSettings()
        settings.capacity = 150_000
        return (0..<rounds).map { _ in
            ProcessMemory.trimHeap()
            let before = ProcessMemory.residentBytes()
            var policy = HTTPDNSCachePolicy(settings: settings)
            for name in names {
                // A fresh string per host, as the engine's normalisation makes one.
                policy.store(
                    HTTPDNSCacheKey(host: String(decoding: Array(name.utf8), as: UTF8.self), family: .ipv4),
                    addresses: [address], ttl: 86_400, source: "static", origin: .static, now: 0)
            }
            ProcessMemory.trimHeap()
            let after = ProcessMemory.residentBytes()
            withExtendedLifetime(policy) {}
            return Double(after - before) / Double(hosts)
        }
    }
}
