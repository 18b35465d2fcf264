import Foundation
import HTTPDNS
import HTTPDNSCore

/// Row 7: resident memory per cached host with 100,000 hosts in the cache.
///
/// A ``StaticResolver`` with 100,000 names (`h12345.memory.bench.test`, 24-25 bytes: longer than
/// Swift's 15-byte inline strings, as real host names are) is built first, and its memory is part
/// of the "before" figure. Then an engine with capacity 150,000 resolves every name once, one at a
/// time (so freed lookup tasks are reused rather than piling up), and the RSS growth (`VmRSS` from
/// `/proc/self/status`, after `malloc_trim(0)` on both sides) is divided by 100,000.
enum CacheMemoryBench {
    static let hosts = 100_000

    static func run(_ runner: BenchRunner) async throws -> [BenchRow] {
        let address = IPAddress("93.184.216.34")!
        let names = (0..<hosts).map { "h\($0).memory.bench.test" }
        let resolver = StaticResolver(Dictionary(uniqueKeysWithValues: names.map { ($0, [address]) }), ttl: 86_400)
        var perHost: [Double] = []
        let rounds = runner.options.quick ? 1 : 3
        let deadline = runner.deadline(seconds: 60)
        for round in 0..<rounds {
            if round > 0, ContinuousClock.now > deadline { break }
            var configuration = HTTPDNSConfiguration(providers: [resolver])
            configuration.failover.httpdnsOnly = true
            configuration.localDNS = .custom(StaticResolver([:]))
            configuration.cache.policy.capacity = 150_000
            BenchSystem.trimHeap()
            let before = BenchSystem.residentBytes()
            let engine = HTTPDNSEngine(configuration: configuration)
            for name in names {
                _ = try await engine.resolve(name)
            }
            BenchSystem.trimHeap()
            let after = BenchSystem.residentBytes()
            guard engine.cachedAnswer(names[0]) != nil, engine.cachedAnswer(names[hosts - 1]) != nil else {
                throw BenchFailure("the cache did not keep all \(hosts) hosts")
            }
            perHost.append(Double(after - before) / Double(hosts))
            withExtendedLifetime(engine) {}
        }
        let stats = BenchStats(perHost)
        return [
            BenchRow(
                id: "7a", title: "memory per cached host at 100,000 hosts (RSS growth ÷ 100,000)", unit: "bytes",
                subject: stats, target: "≤ 512 bytes", passed: stats.median <= 512)
        ]
    }
}
