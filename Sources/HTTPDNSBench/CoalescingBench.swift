import Foundation
import HTTPDNS
import HTTPDNSCore
import HTTPDNSTransport

/// Row 3: 10,000 lookups started at once over 100 names, against a provider whose server counts the
/// requests it gets. Concurrent lookups of one name must share one upstream request, so exactly 100
/// requests may arrive; and the whole burst must finish in under a second.
///
/// Each round uses a fresh engine and 100 names never asked before, so every round starts cold.
enum CoalescingBench {
    static let lookups = 10_000
    static let names = 100

    static func run(_ runner: BenchRunner) async throws -> [BenchRow] {
        let server = try BenchServers.CountingHTTPDNS()
        defer { server.stop() }
        let transport = HTTPTransport()
        let provider = try ColdResolveBench.makeProvider(.dnspod, base: server.base, transport: transport)
        var upstreamCounts: [Double] = []
        var milliseconds: [Double] = []
        let rounds = runner.options.quick ? 2 : 7
        let deadline = runner.deadline(seconds: 60)
        for round in 0..<(rounds + 1) {
            if round > 1, ContinuousClock.now > deadline { break }
            var configuration = HTTPDNSConfiguration(resolvers: [provider])
            configuration.failover.httpdnsOnly = true
            configuration.localDNS = .custom(HTTPDNSStaticResolver([:]))
            let engine = HTTPDNSEngine(configuration: configuration)
            let hosts = (0..<names).map { "r\(round)-n\($0).bench.test" }
            let before = server.requestCount
            let failures = HTTPDNSLock([String]())
            let elapsed = await benchMeasureNanoseconds {
                await withTaskGroup(of: Void.self) { group in
                    for index in 0..<lookups {
                        let host = hosts[index % names]
                        group.addTask {
                            do {
                                _ = try await engine.resolve(host)
                            } catch {
                                failures.withLock { if $0.count < 5 { $0.append("\(host): \(error)") } }
                            }
                        }
                    }
                }
            }
            let failed = failures.withLock { $0 }
            guard failed.isEmpty else { throw BenchFailure("lookups failed: \(failed.joined(separator: "; "))") }
            // Round 0 warms up threads, the connection and the allocator; it is not recorded.
            if round == 0 { continue }
            upstreamCounts.append(Double(server.requestCount - before))
            milliseconds.append(elapsed / 1_000_000)
            if engine.upstreamLookupCount != names {
                throw BenchFailure("engine counted \(engine.upstreamLookupCount) upstream lookups, expected \(names)")
            }
        }
        let counts = BenchStats(upstreamCounts)
        let time = BenchStats(milliseconds)
        return [
            BenchRow(
                id: "3a", title: "upstream requests for 10,000 concurrent lookups of 100 names", unit: "requests",
                subject: counts, target: "exactly 100 (every round)",
                passed: counts.min == Double(names) && counts.max == Double(names)),
            BenchRow(
                id: "3b", title: "wall time of those 10,000 lookups", unit: "ms", subject: time,
                target: "< 1000 ms (every round)", passed: time.max < 1000),
        ]
    }
}
