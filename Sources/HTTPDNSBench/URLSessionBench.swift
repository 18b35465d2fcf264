import Foundation
import HTTPDNS
import HTTPDNSCore
import HTTPDNSTransport
import HTTPDNSNetworking
import HTTPDNSURLSession
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Row 4: requests per second through `URLSession` with ``HTTPDNSURLProtocol`` installed, 16 in
/// flight, to nginx over HTTPS on 127.0.0.1, against plain `URLSession` to the same nginx by its IP
/// SAN (`https://127.0.0.1:PORT/`), the way code without HTTPDNS would reach it.
///
/// The protected side asks for `https://bench.test:PORT/`; the engine answers 127.0.0.1 from a
/// ``HTTPDNSStaticResolver`` (cache hits after the first request), and the protocol sends through libcurl
/// with the real host in SNI and certificate checks. Both sides keep connections alive.
enum URLSessionBench {
    static let inFlight = 16

    static func run(_ runner: BenchRunner) async throws -> [BenchRow] {
        let origin = try BenchServers.Origin()
        defer { origin.stop() }
        try BenchTrust.trustForURLSession(caPEM: origin.certificates.caCertificatePEM, directory: origin.certificates.directory)
        defer { BenchTrust.untrust() }

        let client = protectedClient(origin)
        let protected = URLSessionConfiguration.default
        protected.httpMaximumConnectionsPerHost = inFlight
        try protected.httpdnsInstall(client)
        let protectedSession = URLSession(configuration: protected)
        let plain = URLSessionConfiguration.default
        plain.httpMaximumConnectionsPerHost = inFlight
        let plainSession = URLSession(configuration: plain)
        defer {
            protectedSession.invalidateAndCancel()
            plainSession.invalidateAndCancel()
        }

        let requests = runner.options.quick ? 300 : 1500
        let expected = Data(BenchServers.Origin.body.utf8)
        func fetch(_ session: URLSession, _ url: URL) -> @Sendable () async throws -> Void {
            {
                let (data, response) = try await session.data(from: url)
                guard (response as? HTTPURLResponse)?.statusCode == 200, data == expected else {
                    throw BenchFailure("\(url): unexpected answer \(response)")
                }
            }
        }
        let results = try await runner.interleave(
            rounds: runner.rounds, deadline: runner.deadline(seconds: 90),
            [
                { try await requestsPerSecond(requests, fetch(plainSession, origin.directURL)) },
                { try await requestsPerSecond(requests, fetch(protectedSession, origin.protectedURL)) },
            ])
        let ratio = BenchStats.ratios(results[1], over: results[0])
        return [
            BenchRow(
                id: "4a", title: "URLSession + HTTPDNSURLProtocol, 16 in flight, HTTPS (nginx)", unit: "req/s",
                subject: BenchStats(results[1]), baselineTitle: "plain URLSession to https://127.0.0.1 (IP SAN)",
                baseline: BenchStats(results[0]), ratio: ratio, target: "≥ 2.0× (issue 35)", passed: ratio.median >= 2.0,
                note: ratio.median >= 2 ? "stretch target (≥ 2×) reached" : nil)
        ]
    }

    /// A client whose engine answers `bench.test` with 127.0.0.1 and that trusts the bench CA.
    static func protectedClient(_ origin: BenchServers.Origin) -> HTTPDNSClient {
        var configuration = HTTPDNSConfiguration(
            resolvers: [HTTPDNSStaticResolver([BenchServers.Origin.host: [HTTPDNSIPAddress("127.0.0.1")!]], ttl: 86_400)])
        configuration.hygiene.allowPrivate = true
        configuration.failover.httpdnsOnly = true
        configuration.localDNS = .custom(HTTPDNSStaticResolver([:]))
        configuration.trust = .caFile(origin.certificates.caCertificatePath)
        var transportConfiguration = HTTPTransport.Configuration()
        transportConfiguration.maxConnectionsPerHost = inFlight
        return HTTPDNSClient(
            engine: HTTPDNSEngine(configuration: configuration), transport: HTTPTransport(configuration: transportConfiguration))
    }

    /// Runs `count` requests keeping ``inFlight`` of them running; returns requests per second.
    static func requestsPerSecond(_ count: Int, _ request: @escaping @Sendable () async throws -> Void) async throws -> Double {
        let elapsed = try await benchMeasureNanoseconds {
            try await withThrowingTaskGroup(of: Void.self) { group in
                var started = 0
                while started < min(inFlight, count) {
                    group.addTask { try await request() }
                    started += 1
                }
                while try await group.next() != nil {
                    if started < count {
                        group.addTask { try await request() }
                        started += 1
                    }
                }
            }
        }
        return Double(count) / (elapsed / 1e9)
    }
}
