import Foundation
import HTTPDNS
import HTTPDNSCore
import HTTPDNSTransport

/// Row 2: a lookup that misses the cache and goes to the provider, through each wire format, against
/// ``HTTPDNSService`` on 127.0.0.1; µs per lookup, one lookup at a time.
///
/// Every lookup asks a name never asked before (`cN.bench.test`), so the engine's cache never
/// answers. The baseline is libcurl alone: ``HTTPTransport/send(_:)`` of the very request the
/// provider would build for a fresh name, on the same reused connection, without the engine or the
/// parser. The ratio is therefore the whole cost of the HTTPDNS layers above the HTTP exchange.
///
/// Rows 2g–2l divide the same lookups by their floor (issue 35): the lookup made by hand, without
/// the engine: the bench builds the format's request for the fresh name, sends it on the same
/// transport, parses the answer with the format on the transport's thread as the engine does, and
/// keeps the addresses in a dictionary under the project's lock. That is the work any HTTPDNS
/// lookup has to do (a request for the name, its answer read, the addresses kept); what the engine
/// adds beyond it (its cache policy, the shared flight, hygiene, failover bookkeeping) is what 2g–2l
/// measure.
enum ColdResolveBench {
    static let kinds: [HTTPDNSProviderSpec.Kind] = [.dnspod, .alibaba, .doh, .dohPost, .dohJSON, .ips]

    static func run(_ runner: BenchRunner) async throws -> [BenchRow] {
        let server = try BenchServers.CountingHTTPDNS()
        defer { server.stop() }
        let transport = HTTPTransport()
        let lookups = runner.options.quick ? 40 : 200
        let names = NameSource()
        var rows: [BenchRow] = []
        var floorRows: [BenchRow] = []
        for (offset, kind) in kinds.enumerated() {
            let provider = try makeProvider(kind, base: server.base, transport: transport)
            var configuration = HTTPDNSConfiguration(resolvers: [provider])
            configuration.failover.httpdnsOnly = true
            configuration.localDNS = .custom(HTTPDNSStaticResolver([:]))
            configuration.cache.policy.capacity = 100_000
            let engine = HTTPDNSEngine(configuration: configuration)
            // The process's CPU time per lookup, each variant's calls apart (the in-process service
            // included, alike for both): says whether the engine's extra is work or waiting.
            var cpu: [[Double]] = [[], []]

            let subject: () async throws -> Double = {
                let batch = names.next(lookups)
                let cpuBefore = try ServerBench.cpuSeconds(getpid())
                let elapsed = try await benchMeasureNanoseconds {
                    for name in batch {
                        let answer = try await engine.resolve(name)
                        guard answer.addresses == [BenchServers.zoneAddress], !answer.fromCache else {
                            throw BenchFailure("\(kind.rawValue): unexpected answer \(answer)")
                        }
                    }
                }
                cpu[1].append((try ServerBench.cpuSeconds(getpid()) - cpuBefore) / Double(lookups) * 1e6)
                return elapsed / Double(lookups) / 1000
            }
            let baseline: () async throws -> Double = {
                let requests = try names.next(lookups).map { name in
                    try provider.format.requests(for: [name], family: .ipv4, now: Int64(Date().timeIntervalSince1970))[0]
                }
                let cpuBefore = try ServerBench.cpuSeconds(getpid())
                let elapsed = try await benchMeasureNanoseconds {
                    for request in requests {
                        let response = try await transport.send(transportRequest(request, provider: provider))
                        guard response.statusCode == 200 else {
                            throw BenchFailure("\(kind.rawValue): HTTP \(response.statusCode) for \(request.url)")
                        }
                    }
                }
                cpu[0].append((try ServerBench.cpuSeconds(getpid()) - cpuBefore) / Double(lookups) * 1e6)
                return elapsed / Double(lookups) / 1000
            }
            let kept = HTTPDNSLock([String: [HTTPDNSIPAddress]]())
            let floor: () async throws -> Double = {
                let batch = names.next(lookups)
                let elapsed = try await benchMeasureNanoseconds {
                    for name in batch {
                        let addresses = try await handMadeLookup(name, provider: provider, transport: transport, keeping: kept)
                        guard addresses == [BenchServers.zoneAddress] else {
                            throw BenchFailure("\(kind.rawValue): unexpected addresses \(addresses) by hand")
                        }
                    }
                }
                return elapsed / Double(lookups) / 1000
            }
            let results = try await runner.interleave(
                rounds: runner.rounds, deadline: runner.deadline(seconds: 60), [baseline, subject, floor])
            let ratio = BenchStats.ratios(results[1], over: results[0])
            let toFloor = BenchStats.ratios(results[1], over: results[2])
            let (cpuBase, cpuSubject) = (BenchStats(BenchRunner.recorded(cpu[0])), BenchStats(BenchRunner.recorded(cpu[1])))
            let wallExtra = BenchStats(results[1]).median - BenchStats(results[0]).median
            rows.append(BenchRow(
                id: "2\(Character(UnicodeScalar(UInt8(ascii: "a") + UInt8(offset))))",
                title: "cold engine.resolve via \(kind.rawValue)", unit: "µs/lookup", subject: BenchStats(results[1]),
                baselineTitle: "HTTPTransport.send, same URL", baseline: BenchStats(results[0]), ratio: ratio,
                target: "≤ 1.1× (issue 35)", passed: ratio.median <= 1.1,
                note: String(
                    format: "process CPU per lookup %.0f µs against %.0f µs: %+.0f µs, the wall-clock difference %+.0f µs",
                    cpuSubject.median, cpuBase.median, cpuSubject.median - cpuBase.median, wallExtra)))
            floorRows.append(BenchRow(
                id: "2\(Character(UnicodeScalar(UInt8(ascii: "g") + UInt8(offset))))",
                title: "cold engine.resolve via \(kind.rawValue) ÷ the lookup by hand (the floor)", unit: "µs/lookup",
                subject: BenchStats(results[1]), baselineTitle: "request, exchange, parse, store without the engine",
                baseline: BenchStats(results[2]), ratio: toFloor, target: "≤ 1.1× (within 1.1× of the floor)",
                passed: toFloor.median <= 1.1,
                note: String(
                    format: "the floor is %.2f× the bare exchange in the same rounds",
                    BenchStats.ratios(results[2], over: results[0]).median)))
        }
        return rows + floorRows
    }

    /// One lookup without the engine: the format's request for `name`, sent on `transport`, its
    /// answer parsed where the transport reports it (as the engine's provider does), the addresses
    /// kept in `kept`.
    static func handMadeLookup(
        _ name: String, provider: HTTPDNSProvider, transport: HTTPTransport, keeping kept: HTTPDNSLock<[String: [HTTPDNSIPAddress]]>
    ) async throws -> [HTTPDNSIPAddress] {
        let request = try provider.format.requests(for: [name], family: .ipv4, now: Int64(Date().timeIntervalSince1970))[0]
        let sent = transportRequest(request, provider: provider)
        return try await withUnsafeThrowingContinuation { (continuation: UnsafeContinuation<[HTTPDNSIPAddress], any Error>) in
            do {
                try transport.send(sent) { result in
                    continuation.resume(with: Result {
                        let response = try result.get()
                        let sets = try provider.format.parse(status: response.statusCode, body: [UInt8](response.body), for: request)
                        guard let set = sets.first(where: { $0.host == name }) else { throw BenchFailure("no \(name) in the answer") }
                        let addresses = set.addresses(for: .ipv4)
                        kept.withLock { $0[name] = addresses }
                        return addresses
                    })
                }
            } catch {
                continuation.resume(throwing: error)
            }
        }
    }

    /// The provider a user would configure for `kind`, pointed at the local service.
    static func makeProvider(_ kind: HTTPDNSProviderSpec.Kind, base: String, transport: HTTPTransport) throws -> HTTPDNSProvider {
        let location: String
        switch kind {
        case .dnspod: location = base
        case .alibaba: location = "\(base)/100000"
        case .doh, .dohPost: location = "\(base)/dns-query"
        case .dohJSON: location = "\(base)/resolve"
        case .ips: location = "\(base)/ips"
        case .udp, .system: throw BenchFailure("\(kind.rawValue) is not an HTTP provider")
        }
        let resolver = try HTTPDNSProviderSpec(kind: kind, location: location).makeResolver(transport: transport)
        guard let provider = resolver as? HTTPDNSProvider else { throw BenchFailure("\(kind.rawValue) is not an HTTPDNSProvider") }
        return provider
    }

    /// The transport request ``HTTPDNSProvider`` sends for `request` (same headers, body, limits).
    static func transportRequest(_ request: HTTPDNSProviderRequest, provider: HTTPDNSProvider) -> HTTPTransportRequest {
        var transportRequest = HTTPTransportRequest(url: URL(string: request.url)!, method: request.method)
        transportRequest.headers = request.headers.sorted { $0.key < $1.key }.map { HTTPTransportHeader(name: $0.key, value: $0.value) }
        if let body = request.body { transportRequest.body = .data(Data(body)) }
        transportRequest.pinnedAddresses = provider.configuration.bootstrapAddresses
        transportRequest.trust = provider.configuration.trust ?? .system
        transportRequest.timeouts = .init(
            connect: provider.configuration.connectTimeout, total: provider.configuration.totalTimeout, idle: provider.configuration.totalTimeout)
        transportRequest.maxResponseBytes = HTTPDNSFormatLimits.maxBodyBytes
        return transportRequest
    }

    /// Names never asked before: `c1.bench.test`, `c2.bench.test`, …
    final class NameSource: Sendable {
        private let counter = HTTPDNSLock(0)

        func next(_ count: Int) -> [String] {
            let start = counter.withLock { value -> Int in
                defer { value += count }
                return value
            }
            return (start..<start + count).map { "c\($0).bench.test" }
        }
    }
}
